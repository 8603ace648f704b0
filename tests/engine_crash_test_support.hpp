#pragma once
// Shared by the engine's crash tests: a row type that catches torn or misplaced values,
// random transactions reproducible from a seed, and the model of what must survive.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/database.hpp"
#include "engine/table.hpp"
#include "engine/transaction.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace crash_test {

struct Row {
  std::uint64_t key;  // repeated, so a torn or misplaced value is caught
  std::uint64_t version;
  std::array<std::uint8_t, 184> filler;
};
using Model = std::map<std::uint64_t, Row>;

constexpr std::uint64_t kKeySpace = 16000;
constexpr std::uint64_t kLoadedKeys = 8000;  // every other key

// The run's seed; transaction i's own seed derives from it (make_txn).
inline std::uint64_t base_seed() { return testing_support::test_seed(); }

inline int rounds() { return testing_support::soak_iterations(3); }

inline Row make_row(std::uint64_t key, std::uint64_t version) {
  Row row{key, version, {}};
  row.filler.fill(static_cast<std::uint8_t>(key * 31 + version));
  return row;
}

struct Op {
  enum Kind { kInsert, kUpdate, kRemove } kind;
  std::uint64_t key;
};
struct Txn {
  std::vector<Op> ops;
  bool commit;
};

// Transaction i of a run, the same in child and parent.
inline Txn make_txn(std::uint64_t seed, std::uint64_t i) {
  std::mt19937_64 random(seed * 1000003 + i);
  Txn txn;
  const int count = 1 + static_cast<int>(random() % 6);
  for (int n = 0; n < count; ++n)
    txn.ops.push_back({static_cast<Op::Kind>(random() % 3), random() % kKeySpace});
  txn.commit = random() % 5 != 0;
  return txn;
}

// What the table does with op (insert only if absent, update and remove only if present).
inline void apply(Model& model, const Op& op, std::uint64_t version) {
  auto it = model.find(op.key);
  if (op.kind == Op::kInsert && it == model.end()) model[op.key] = make_row(op.key, version);
  if (op.kind == Op::kUpdate && it != model.end()) it->second = make_row(op.key, version);
  if (op.kind == Op::kRemove && it != model.end()) model.erase(it);
}

inline Model loaded_model() {
  Model model;
  for (std::uint64_t k = 0; k < kKeySpace; k += kKeySpace / kLoadedKeys) model[k] = make_row(k, 0);
  return model;
}

using Files = testing_support::DatabaseFiles;

inline Config config_for(Architecture arch, const Files& files, bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 640 * 1024;  // a few dozen frames: most pages live below DRAM
  config.nvm_bytes = arch == Architecture::kThreeTier ? 2 * kMiB : 12 * kMiB;
  config.ssd_bytes = 64 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  return config;
}

// The model after transactions 1..last (committed ones only) on a table loaded as `model`.
inline Model model_after(std::uint64_t seed, std::uint64_t last, Model model = loaded_model()) {
  for (std::uint64_t i = 1; i <= last; ++i) {
    const Txn txn = make_txn(seed, i);
    if (!txn.commit) continue;
    for (const Op& op : txn.ops) apply(model, op, i);
  }
  return model;
}

inline Model scan_all(Table<std::uint64_t, Row>& table) {
  Model seen;
  std::uint64_t previous = 0;
  bool first = true;
  table.scan(0, SIZE_MAX, [&](const std::uint64_t& k, const Row& row) {
    EXPECT_TRUE(first || k > previous) << "scan out of key order at " << k;
    first = false;
    previous = k;
    seen[k] = row;
    return true;
  });
  return seen;
}

inline bool same(const Model& a, const Model& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
    if (ia->first != ib->first || std::memcmp(&ia->second, &ib->second, sizeof(Row)) != 0)
      return false;
  return true;
}

// What differs between two models, for failure messages: counts and the first few keys.
inline std::string describe_difference(const Model& expected, const Model& seen) {
  std::string missing, extra, changed;
  std::size_t missing_count = 0, extra_count = 0, changed_count = 0;
  auto note = [](std::string& list, std::size_t& count, std::uint64_t key, std::uint64_t version) {
    // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on " " + std::string.
    if (count++ >= 5) return;
    list += ' ';
    list += std::to_string(key);
    list += "@v";
    list += std::to_string(version);
  };
  for (const auto& [key, row] : expected) {
    auto it = seen.find(key);
    if (it == seen.end())
      note(missing, missing_count, key, row.version);
    else if (std::memcmp(&it->second, &row, sizeof(Row)) != 0)
      note(changed, changed_count, key, it->second.version);
  }
  for (const auto& [key, row] : seen)
    if (!expected.contains(key)) note(extra, extra_count, key, row.version);
  return std::to_string(missing_count) + " missing [" + missing + " ], " +
         std::to_string(extra_count) + " extra [" + extra + " ], " + std::to_string(changed_count) +
         " changed (seen version) [" + changed + " ]";
}

// TRISTORE_SOAK_ITERATIONS=N (the one soak knob of the crash tests) multiplies the crash points
// of the tiered crash-simulator test (default 1).
inline std::uint64_t crash_soak() { return testing_support::soak_iterations(); }

// Runs transaction i of a run; returns after commit or abort.
inline void run_txn(Database& db, Table<std::uint64_t, Row>& table, std::uint64_t seed,
                    std::uint64_t i) {
  const Txn txn = make_txn(seed, i);
  Transaction t = db.begin();
  for (const Op& op : txn.ops) {
    if (op.kind == Op::kInsert) table.insert(t, op.key, make_row(op.key, i));
    if (op.kind == Op::kUpdate) table.update(t, op.key, make_row(op.key, i));
    if (op.kind == Op::kRemove) table.remove(t, op.key);
  }
  if (txn.commit)
    t.commit();
  else
    t.abort();
}

}  // namespace crash_test
}  // namespace tristore
