#pragma once
// Helpers every test file may use: a scratch directory, and a seed that is printed and can be
// replayed with TRISTORE_SEED.
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

namespace tristore::testing_support {

// A fresh directory under `base` (the SSD tests' default: /tmp, on ext4), removed with its
// contents when the test ends.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const char* base = "/tmp") {
    std::string pattern = std::string(base) + "/tristore-ssd-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// TRISTORE_SEED if set, else a random seed; printed either way so a failure can be replayed.
inline std::uint64_t test_seed() {
  const char* env = std::getenv("TRISTORE_SEED");
  std::uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("seed %llu (replay with TRISTORE_SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace tristore::testing_support
