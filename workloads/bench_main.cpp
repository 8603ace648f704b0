// tristore-bench: the single entry point for every experiment (docs/design.md section 9).
// Exit status: 0 success, 2 bad flags or a run that cannot work (one line on stderr), 1 other
// failures.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <fstream>

#include "common/error.hpp"
#include "workloads/bench_flags.hpp"
#include "workloads/bench_runner.hpp"

namespace {

void write_json(const std::string& path, const nlohmann::json& result) {
  std::ofstream out(path);
  out << result.dump(2) << '\n';
  if (!out) tristore::fail("--json {}: cannot write the result file", path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tristore-bench: YCSB and TPC-C on the five tristore architectures"};
  tristore::BenchFlags flags(app);
  try {
    app.parse(argc, argv);
    const tristore::BenchOptions options = flags.finish();
    const nlohmann::json result = tristore::run_bench(options);
    if (!options.json_path.empty()) write_json(options.json_path, result);
    fmt::print("{}\n", tristore::summary_line(result));
    return 0;
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "tristore-bench: {}\n", e.what());
    return 2;
  } catch (const tristore::Error& e) {
    fmt::print(stderr, "tristore-bench: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tristore-bench: unexpected failure: {}\n", e.what());
    return 1;
  }
}
