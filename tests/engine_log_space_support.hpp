#pragma once
// Shared by the log-space tests: databases with the smallest logs the engine accepts, a table
// of 512-byte rows, and long transactions whose log records outgrow the log (inserts between
// loaded keys split leaves, which logs half a page each time) while their live undo stays small.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/database.hpp"
#include "engine/storage_files.hpp"
#include "engine/table.hpp"
#include "engine/transaction.hpp"
#include "tests/test_support.hpp"

namespace tristore::log_space_test {

struct Row {
  std::uint64_t key;  // repeated, so a misplaced value is caught
  std::uint64_t version;
  std::array<std::uint8_t, 496> filler;
};
static_assert(sizeof(Row) == 512);
using Model = std::map<std::uint64_t, Row>;
using RowTable = Table<std::uint64_t, Row>;

constexpr std::uint64_t kLoadedRows = 2000;  // keys 0, 2, 4, ...

inline Row make_row(std::uint64_t key, std::uint64_t version) {
  Row row{key, version, {}};
  row.filler.fill(static_cast<std::uint8_t>(key * 31 + version));
  return row;
}

// NVM sizes whose log (an eighth) is about the smallest each architecture accepts for these
// trees: 512 KiB of log, 1 MiB on nvm-direct (whose operations also log before-images).
inline std::uint64_t small_nvm_bytes(Architecture arch) {
  return arch == Architecture::kNvmDirect || arch == Architecture::kBasicNvm ? 8 * kMiB : 4 * kMiB;
}
inline std::uint64_t log_bytes(Architecture arch) { return nvm_log_bytes(small_nvm_bytes(arch)); }

inline Config config_for(Architecture arch, const testing_support::DatabaseFiles& files,
                         bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 2 * kMiB;
  config.nvm_bytes = small_nvm_bytes(arch);
  config.ssd_bytes = 64 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  return config;
}

inline void load(RowTable& table) {
  table.bulk_load(kLoadedRows, [](std::size_t i, std::uint64_t& key, Row& row) {
    key = 2 * i;
    row = make_row(key, 0);
  });
}

inline Model loaded_model() {
  Model model;
  for (std::uint64_t i = 0; i < kLoadedRows; ++i) model[2 * i] = make_row(2 * i, 0);
  return model;
}

struct Op {
  enum Kind { kInsert, kUpdate, kRemove } kind;
  std::uint64_t key;
};

// A long transaction: `inserts` new odd keys between the loaded ones, `changes` updates and
// `changes` removes of distinct loaded keys, in random order; and, placed at random after
// their first change, a second update of half the updated keys and a new insert of half the
// removed ones (so undo must keep the order of one key's steps).
inline std::vector<Op> long_transaction(std::uint64_t seed, std::size_t inserts,
                                        std::size_t changes) {
  std::mt19937_64 random(seed);
  std::set<std::uint64_t> odd, even;
  while (odd.size() < inserts) odd.insert(2 * (random() % kLoadedRows) + 1);
  while (even.size() < 2 * changes) even.insert(2 * (random() % kLoadedRows));
  std::vector<Op> ops;
  for (std::uint64_t key : odd) ops.push_back({Op::kInsert, key});
  std::size_t n = 0;
  for (std::uint64_t key : even) ops.push_back({n++ % 2 == 0 ? Op::kUpdate : Op::kRemove, key});
  std::shuffle(ops.begin(), ops.end(), random);
  std::vector<Op> seconds;
  for (const Op& op : ops)
    if (op.kind != Op::kInsert && random() % 2 == 0)
      seconds.push_back({op.kind == Op::kUpdate ? Op::kUpdate : Op::kInsert, op.key});
  for (const Op& second : seconds) {
    const auto first =
        std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.key == second.key; });
    const auto after = static_cast<std::size_t>(first - ops.begin()) + 1;
    ops.insert(
        ops.begin() + static_cast<std::ptrdiff_t>(after + random() % (ops.size() - after + 1)),
        second);
  }
  return ops;
}

inline void apply(Model& model, const Op& op, std::uint64_t version) {
  if (op.kind == Op::kInsert) model[op.key] = make_row(op.key, version);
  if (op.kind == Op::kUpdate) model[op.key] = make_row(op.key, version);
  if (op.kind == Op::kRemove) model.erase(op.key);
}

inline Model model_with(const std::vector<Op>& ops, std::uint64_t version) {
  Model model = loaded_model();
  for (const Op& op : ops) apply(model, op, version);
  return model;
}

// Runs op in txn; false if the table did not do what the model expects.
inline bool run(RowTable& table, Transaction& txn, const Op& op, std::uint64_t version) {
  if (op.kind == Op::kInsert) return table.insert(txn, op.key, make_row(op.key, version));
  if (op.kind == Op::kUpdate) return table.update(txn, op.key, make_row(op.key, version));
  return table.remove(txn, op.key);
}

inline Model scan_all(RowTable& table) {
  Model seen;
  table.scan(0, SIZE_MAX, [&](const std::uint64_t& key, const Row& row) {
    seen[key] = row;
    return true;
  });
  return seen;
}

// How two models differ, for failure messages.
inline std::string difference(const Model& expected, const Model& seen) {
  std::size_t missing = 0, extra = 0, changed = 0;
  for (const auto& [key, row] : expected) {
    auto it = seen.find(key);
    if (it == seen.end())
      ++missing;
    else if (std::memcmp(&it->second, &row, sizeof(Row)) != 0)
      ++changed;
  }
  for (const auto& [key, row] : seen) extra += expected.contains(key) ? 0 : 1;
  return std::to_string(missing) + " missing, " + std::to_string(extra) + " extra, " +
         std::to_string(changed) + " changed of " + std::to_string(expected.size()) + " rows";
}

inline bool same(const Model& a, const Model& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
           return x.first == y.first && std::memcmp(&x.second, &y.second, sizeof(Row)) == 0;
         });
}

inline const char* name(Architecture arch) { return architecture_name(arch).data(); }

constexpr Architecture kDurable[] = {Architecture::kThreeTier, Architecture::kBasicNvm,
                                     Architecture::kSsdBm, Architecture::kNvmDirect};

}  // namespace tristore::log_space_test
