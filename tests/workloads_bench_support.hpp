#pragma once
// Running the tristore-bench binary from a test: its exit status, stdout and stderr.
// workloads/CMakeLists.txt passes the binary's path as TRISTORE_BENCH_PATH.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#ifndef TRISTORE_BENCH_PATH
#error "workloads/CMakeLists.txt passes the path of tristore-bench"
#endif

namespace tristore::testing_support {

struct BenchOutcome {
  int status = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs tristore-bench with `args` (shell words), its output captured in files under `dir`.
inline BenchOutcome run_bench(const std::string& args, const std::filesystem::path& dir) {
  const std::string command = std::string("'") + TRISTORE_BENCH_PATH + "' " + args + " >'" +
                              (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  const int raw = std::system(command.c_str());
  BenchOutcome outcome;
  outcome.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  outcome.out = read_file(dir / "out");
  outcome.err = read_file(dir / "err");
  return outcome;
}

}  // namespace tristore::testing_support
