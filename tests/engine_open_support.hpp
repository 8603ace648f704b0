#pragma once
// Shared by the tests of what Database::open does with existing files (open modes, wrong
// architectures, second openers): a small database per architecture, committed rows to look
// for afterwards, and the bytes of its files to prove an open left them untouched.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "engine/database.hpp"
#include "engine/storage_files.hpp"
#include "engine/table.hpp"
#include "engine/transaction.hpp"
#include "tests/test_support.hpp"

namespace tristore::open_test {

constexpr Architecture kDurable[] = {Architecture::kThreeTier, Architecture::kBasicNvm,
                                     Architecture::kNvmDirect, Architecture::kSsdBm};

constexpr std::uint64_t kRows = 3000;

inline const char* name(Architecture arch) { return architecture_name(arch).data(); }

inline Config small_config(Architecture arch, const testing_support::DatabaseFiles& files,
                           OpenMode mode = OpenMode::kOpenOrCreate) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 2 * kMiB;
  config.nvm_bytes = 8 * kMiB;
  config.ssd_bytes = 32 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  config.open_mode = mode;
  return config;
}

// kRows rows in table "rows", committed ten per transaction.
inline void write_rows(Database& db) {
  auto table = db.create_table<std::uint64_t, std::uint64_t>("rows");
  for (std::uint64_t first = 0; first < kRows; first += 10) {
    Transaction txn = db.begin();
    for (std::uint64_t k = first; k < first + 10; ++k) ASSERT_TRUE(table.insert(txn, k, k * 7));
    txn.commit();
  }
}

// Every committed row of write_rows, and nothing else.
inline void expect_rows(Database& db) {
  auto table = db.open_table<std::uint64_t, std::uint64_t>("rows");
  std::map<std::uint64_t, std::uint64_t> seen;
  table.scan(0, SIZE_MAX, [&](const std::uint64_t& k, const std::uint64_t& v) {
    seen[k] = v;
    return true;
  });
  ASSERT_EQ(seen.size(), kRows);
  for (const auto& [k, v] : seen) ASSERT_EQ(v, k * 7) << "row " << k;
}

// A file's bytes; "<missing>" when there is none.
inline std::string file_bytes(const std::string& path) {
  if (!std::filesystem::exists(path)) return "<missing>";
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Both files of a database (the SSD file may be missing), to compare before and after.
struct FileBytes {
  std::string nvm;
  std::string ssd;
  explicit FileBytes(const testing_support::DatabaseFiles& files)
      : nvm(file_bytes(files.nvm)), ssd(file_bytes(files.ssd)) {}
  bool operator==(const FileBytes&) const = default;
};

// The Error Database::open throws (one line), or "" when it opened.
inline std::string open_error(const Config& config) {
  try {
    Database::open(config);
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
    return message;
  }
  return "";
}

}  // namespace tristore::open_test
