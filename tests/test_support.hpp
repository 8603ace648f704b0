#pragma once
// Helpers every test file may use: a scratch directory, and a seed that is printed and can be
// replayed with TRISTORE_SEED.
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace tristore::testing_support {

// Whether a child process the test killed with SIGKILL ended by that kill, and not on its own
// before it (an exit, or a signal of its own: an abort on an uncaught exception, a crash).
inline bool killed_by_sigkill(int status) {
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}
// How a child ended, for the message when it was not the kill.
inline std::string how_child_ended(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "status " + std::to_string(status);
}

// Where test files go: NVM files on tmpfs (mapped like DRAM-backed NVM), SSD files on a disk
// file system (O_DIRECT works there, and tmpfs refuses it).
inline constexpr const char* kNvmBase = "/dev/shm";
inline constexpr const char* kSsdBase = "/tmp";

// A fresh directory <base>/<prefix>-XXXXXX, removed with its contents when the test ends:
// files a test puts in it are unique to the test and never outlive it, whatever the exit path
// short of a crash of the test process itself.
struct TempDir {
  std::filesystem::path path;

  explicit TempDir(const char* base = kSsdBase, std::string_view prefix = "tristore-test") {
    std::string pattern = std::string(base) + "/" + std::string(prefix) + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(std::string_view name) const { return (path / name).string(); }
};

// The two files of one database (Config::nvm_path, Config::ssd_path), each in a TempDir on the
// file system its tier wants; neither exists until the database creates it.
struct DatabaseFiles {
  TempDir nvm_dir;
  TempDir ssd_dir;
  std::string nvm;
  std::string ssd;

  explicit DatabaseFiles(std::string_view prefix = "tristore-test")
      : nvm_dir(kNvmBase, prefix),
        ssd_dir(kSsdBase, prefix),
        nvm(nvm_dir.file("db.nvm")),
        ssd(ssd_dir.file("db.ssd")) {}
};

// Both files of one database in one directory on tmpfs, for kill -9 and crash-simulator tests:
// a process crash keeps what reached the page cache, and the SSD file falls back from O_DIRECT.
struct TmpfsDatabaseFiles {
  TempDir dir;
  std::string nvm;
  std::string ssd;

  explicit TmpfsDatabaseFiles(std::string_view prefix)
      : dir(kNvmBase, prefix), nvm(dir.file("db.nvm")), ssd(dir.file("db.ssd")) {}
};

namespace detail {

inline std::optional<std::uint64_t> seed_from_environment() {
  const char* text = std::getenv("TRISTORE_SEED");
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long seed = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE)
    throw std::invalid_argument(std::string("TRISTORE_SEED=") + text +
                                " is not a decimal 64-bit number");
  return seed;
}

// Flushed: a test that crashes or forks must not lose the line or print it twice.
inline std::uint64_t announce(std::uint64_t seed) {
  std::printf("seed %llu (replay with TRISTORE_SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

}  // namespace detail

// TRISTORE_SEED if set, else a fresh random seed; printed either way so a failure can be
// replayed. A test that derives further seeds must derive them from this one.
inline std::uint64_t test_seed() {
  if (const auto seed = detail::seed_from_environment()) return detail::announce(*seed);
  std::random_device device;
  return detail::announce(std::uint64_t{device()} << 32 | device());
}

// TRISTORE_SEED if set, else `fallback`: for tests whose assertions are statistical (a bound
// that one seed in a thousand may miss) or whose data is expensive, which run one known seed
// unless asked for another.
inline std::uint64_t test_seed(std::uint64_t fallback) {
  return detail::announce(detail::seed_from_environment().value_or(fallback));
}

// TRISTORE_SOAK_ITERATIONS=N, the one soak knob of the crash tests: how many times their
// default rounds to run (at least 1); `otherwise` without it.
inline int soak_iterations(int otherwise = 1) {
  const char* soak = std::getenv("TRISTORE_SOAK_ITERATIONS");
  return soak != nullptr ? std::max(1, std::atoi(soak)) : otherwise;
}

// The message of the Error `f` throws, or "(no error)".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace tristore::testing_support
