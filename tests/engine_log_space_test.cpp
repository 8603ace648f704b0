// The log never fails a transaction for lack of space while its live undo fits: a transaction
// that logs several times the log's size commits, or aborts back to where it began, through
// checkpoints that copy its undo records forward; many small transactions keep going through
// the smallest log; a log too small for the largest operation is an Error at open; a
// transaction whose live undo fills the log gets a clear Error and can still abort.
// Seeds are printed; TRISTORE_SEED replays.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "architecture_test_name.hpp"
#include "common/error.hpp"
#include "engine/database.hpp"
#include "engine/table.hpp"
#include "engine/transaction.hpp"
#include "engine/transaction_manager.hpp"
#include "tests/engine_log_space_support.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using namespace log_space_test;

constexpr std::size_t kInserts = 1000;
constexpr std::size_t kChanges = 30;

// Runs the long transaction; returns the log bytes it wrote.
std::uint64_t run_long(Database& db, RowTable& table, Transaction& txn,
                       const std::vector<Op>& ops) {
  const std::uint64_t before = db.counters().log_bytes_written;
  std::uint64_t done = 0;
  for (const Op& op : ops) {
    EXPECT_TRUE(run(table, txn, op, 1)) << "op " << done << " on key " << op.key;
    ++done;
  }
  return db.counters().log_bytes_written - before;
}

// Updates every row again and again in txn, each keeping a 512-byte before-image live, until
// the log refuses one: the updates done, their live undo (as copies) and the Error's text.
struct UndoFill {
  std::uint64_t updates = 0;
  std::uint64_t live = 0;
  std::string message;
};
UndoFill fill_undo_until_error(RowTable& table, Transaction& txn) {
  UndoFill fill;
  try {
    for (std::uint64_t version = 1;; ++version)
      for (std::uint64_t key = 0; key < 2 * kLoadedRows; key += 2, ++fill.updates)
        if (!table.update(txn, key, make_row(key, version))) {
          ADD_FAILURE() << "key " << key << " missing";
          return fill;
        }
  } catch (const Error& error) {
    fill.message = error.what();
  }
  fill.live = fill.updates * TransactionManager::undo_copy_bytes(
                                 sizeof(UndoLogical) + sizeof(std::uint64_t) + sizeof(Row));
  return fill;
}

// Rows of 24 bytes, so the undo grows in small steps, and the NVM that holds their tables.
using SmallRow = std::array<std::uint8_t, 24>;
SmallRow make_small_row(std::uint64_t key, std::uint64_t version) {
  SmallRow row;
  row.fill(static_cast<std::uint8_t>(key * 7 + version));
  return row;
}
Config small_rows_config(Architecture arch, const testing_support::DatabaseFiles& files) {
  Config config = config_for(arch, files, true);
  config.nvm_bytes = arch == Architecture::kNvmDirect ? 20 * kMiB : 10 * kMiB;
  return config;
}

class EngineLogSpace : public testing::TestWithParam<Architecture> {};

TEST_P(EngineLogSpace, TransactionLoggingMoreThanTheLogHoldsCommits) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  const std::vector<Op> ops = long_transaction(seed, kInserts, kChanges);
  const Model expected = model_with(ops, 1);
  testing_support::DatabaseFiles files("tristore-log-space");
  {
    auto db = Database::open(config_for(arch, files, true));
    auto table = db->create_table<std::uint64_t, Row>("rows");
    load(table);
    Transaction txn = db->begin();
    const std::uint64_t checkpoints = db->counters().log_checkpoints;
    const std::uint64_t logged = run_long(*db, table, txn, ops);
    EXPECT_GE(db->counters().log_checkpoints - checkpoints, 1u)
        << "the transaction (" << logged << " bytes of log) must fill the log";
    txn.commit();
    const Model seen = scan_all(table);
    EXPECT_TRUE(same(seen, expected)) << difference(expected, seen);
  }
  auto db = Database::open(config_for(arch, files, false));
  auto table = db->open_table<std::uint64_t, Row>("rows");
  const Model seen = scan_all(table);
  EXPECT_TRUE(same(seen, expected)) << "after reopen: " << difference(expected, seen);
}

TEST_P(EngineLogSpace, TransactionLoggingMoreThanTheLogHoldsAbortsBackToTheStart) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  const std::vector<Op> ops = long_transaction(seed, kInserts, kChanges);
  testing_support::DatabaseFiles files("tristore-log-space");
  {
    auto db = Database::open(config_for(arch, files, true));
    auto table = db->create_table<std::uint64_t, Row>("rows");
    load(table);
    Transaction txn = db->begin();
    const std::uint64_t checkpoints = db->counters().log_checkpoints;
    run_long(*db, table, txn, ops);
    EXPECT_GE(db->counters().log_checkpoints - checkpoints, 1u) << "the log must fill";
    // The abort logs a good part of the log again (a remove per undone insert, and merges).
    const std::uint64_t before = db->counters().log_bytes_written;
    txn.abort();
    EXPECT_GT(db->counters().log_bytes_written - before, log_bytes(arch) / 8);
    const Model seen = scan_all(table);
    EXPECT_TRUE(same(seen, loaded_model())) << difference(loaded_model(), seen);
    // The database goes on.
    Transaction next = db->begin();
    EXPECT_TRUE(table.insert(next, 1, make_row(1, 2)));
    next.commit();
  }
  Model expected = loaded_model();
  expected[1] = make_row(1, 2);
  auto db = Database::open(config_for(arch, files, false));
  auto table = db->open_table<std::uint64_t, Row>("rows");
  const Model seen = scan_all(table);
  EXPECT_TRUE(same(seen, expected)) << "after reopen: " << difference(expected, seen);
}

// Interleaved: two long transactions at once, one commits, the other aborts.
TEST_P(EngineLogSpace, TwoInterleavedLongTransactionsKeepTheirOwnUndo) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  const std::vector<Op> ops = long_transaction(seed, 400, 20);
  testing_support::DatabaseFiles files("tristore-log-space");
  auto db = Database::open(config_for(arch, files, true));
  auto table = db->create_table<std::uint64_t, Row>("rows");
  load(table);
  Transaction kept = db->begin();
  Transaction dropped = db->begin();
  Model expected = loaded_model();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const bool keep = (ops[i].key >> 1) % 2 == 0;  // all steps on one key in one transaction
    EXPECT_TRUE(run(table, keep ? kept : dropped, ops[i], keep ? 1 : 2)) << "op " << i;
    if (keep) apply(expected, ops[i], 1);
  }
  dropped.abort();
  kept.commit();
  const Model seen = scan_all(table);
  EXPECT_TRUE(same(seen, expected)) << difference(expected, seen);
}

TEST_P(EngineLogSpace, ManySmallTransactionsKeepGoingThroughTheSmallestLog) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  std::mt19937_64 random(seed);
  testing_support::DatabaseFiles files("tristore-log-space");
  Config config = config_for(arch, files, true);
  config.nvm_bytes = arch == Architecture::kNvmDirect ? 4 * kMiB : 2 * kMiB;
  if (arch == Architecture::kBasicNvm) config.nvm_bytes = 4 * kMiB;  // NVM holds every page
  auto db = Database::open(config);
  auto table = db->create_table<std::uint64_t, Row>("rows");
  load(table);
  Model expected = loaded_model();
  const std::uint64_t before = db->counters().log_bytes_written;
  for (std::uint64_t version = 1; version <= 1500; ++version) {
    Transaction txn = db->begin();
    Model changed = expected;
    for (int n = 0; n < 3; ++n) {
      const Op op{static_cast<Op::Kind>(random() % 3), random() % (2 * kLoadedRows)};
      const bool present = changed.contains(op.key);
      const bool done = run(table, txn, op, version);
      ASSERT_EQ(done, op.kind == Op::kInsert ? !present : present) << "version " << version;
      if (done) apply(changed, op, version);
    }
    if (random() % 4 == 0) {
      txn.abort();
    } else {
      txn.commit();
      expected = std::move(changed);
    }
  }
  EXPECT_GT(db->counters().log_bytes_written - before, 3 * nvm_log_bytes(config.nvm_bytes));
  const Model seen = scan_all(table);
  EXPECT_TRUE(same(seen, expected)) << difference(expected, seen);
}

TEST_P(EngineLogSpace, LiveUndoThatFillsTheLogIsAClearErrorAndTheTransactionCanStillAbort) {
  const Architecture arch = GetParam();
  testing_support::DatabaseFiles files("tristore-log-space");
  auto db = Database::open(config_for(arch, files, true));
  auto table = db->create_table<std::uint64_t, Row>("rows");
  load(table);
  Transaction txn = db->begin();
  const UndoFill fill = fill_undo_until_error(table, txn);
  EXPECT_NE(fill.message.find("undo records"), std::string::npos) << fill.message;
  EXPECT_EQ(fill.message.find('\n'), std::string::npos) << fill.message;
  // Only live undo of more than a quarter of the log stops it (the log keeps room for a copy
  // of it and for the largest operation).
  EXPECT_GT(fill.live, log_bytes(arch) / 4) << fill.updates << " updates: " << fill.message;
  txn.abort();
  const Model seen = scan_all(table);
  EXPECT_TRUE(same(seen, loaded_model())) << difference(loaded_model(), seen);
  Transaction next = db->begin();
  EXPECT_TRUE(table.update(next, 0, make_row(0, 7)));
  next.commit();
}

// The same beside another thread's short transactions, so the long one's changes run beside
// them (not alone, which runs exclusively). Found by an outside kill -9 audit: changes beside
// others checked only that the log had room for the changes inside and a copy of the live
// undo, so the undo grew past what an undo step needs (the largest operation and the undo
// twice, once a checkpoint has copied it): the transaction's abort failed with "log full", and
// after a crash or a close every open_table of the table failed the same way, for ever. Now
// the abort succeeds, the other thread's commits stay, and the table reopens.
TEST_P(EngineLogSpace, LiveUndoFilledBesideOtherCommitsCanStillAbortAndReopen) {
  constexpr std::uint64_t kRows = 40000, kOtherKeys = 64;
  const Architecture arch = GetParam();
  testing_support::DatabaseFiles files("tristore-log-space");
  Config config = small_rows_config(arch, files);
  // Checkpoints only when the log is full: right after one the changes beside have room to
  // spare, and the undo grew there past what an undo step needs.
  config.checkpoint_interval_bytes = 1 << 30;
  auto db = Database::open(config);
  auto table = db->create_table<std::uint64_t, SmallRow>("rows");
  std::map<std::uint64_t, SmallRow> model;
  for (std::uint64_t i = 0; i < kRows; ++i) {
    ASSERT_TRUE(table.insert(2 * i, make_small_row(2 * i, 0)));
    model[2 * i] = make_small_row(2 * i, 0);
  }
  // The other thread inserts, then updates, odd keys; the long transaction has the even ones.
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> other_commits{0};
  std::thread other([&] {
    for (std::uint64_t n = 0; !stop.load(); ++n) {
      const std::uint64_t key = 2 * (n % kOtherKeys) + 1;
      const SmallRow row = make_small_row(key, 1000 + n);
      try {
        Transaction txn = db->begin();
        if (n < kOtherKeys ? table.insert(txn, key, row) : table.update(txn, key, row)) {
          txn.commit();
          model[key] = row;
          other_commits.fetch_add(1);
        }
      } catch (const Error&) {  // a lock conflict, or the log full for a while: again
        if (n < kOtherKeys) --n;
      }
    }
  });
  while (other_commits.load() < kOtherKeys) std::this_thread::yield();
  Transaction txn = db->begin();
  std::uint64_t updates = 0;
  std::string message;
  try {
    for (std::uint64_t version = 1;; ++version)
      for (std::uint64_t key = 0; key < 2 * kRows; key += 2, ++updates)
        ASSERT_TRUE(table.update(txn, key, make_small_row(key, version))) << key;
  } catch (const Error& error) {
    message = error.what();
  }
  EXPECT_NE(message.find("undo records"), std::string::npos) << message;
  std::string abort_error;
  try {
    txn.abort();
  } catch (const Error& error) {
    abort_error = error.what();
  }
  stop = true;
  other.join();
  const Counters counters = db->counters();
  std::printf("%llu updates, then: %s; changes beside others %llu\n",
              static_cast<unsigned long long>(updates), message.c_str(),
              static_cast<unsigned long long>(counters.changes_beside));
  ASSERT_EQ(abort_error, "") << "the abort failed";
  EXPECT_GT(counters.changes_beside, 0u) << "nothing ran beside: the test tested nothing";
  const auto expect_model = [&](Table<std::uint64_t, SmallRow>& rows) {
    std::size_t seen = 0;
    rows.scan(0, SIZE_MAX, [&](const std::uint64_t& key, const SmallRow& row) {
      const auto it = model.find(key);
      EXPECT_TRUE(it != model.end() && it->second == row) << "key " << key;
      ++seen;
      return true;
    });
    EXPECT_EQ(seen, model.size());
  };
  expect_model(table);
  table = Table<std::uint64_t, SmallRow>(nullptr);
  db.reset();
  config.open_mode = OpenMode::kOpenExisting;
  db = Database::open(config);
  auto reopened = db->open_table<std::uint64_t, SmallRow>("rows");
  expect_model(reopened);
}

// A key of 2 KiB: a few per node, so a few hundred rows make a tree of several levels.
struct WideKey {
  std::uint64_t id;
  std::array<std::uint8_t, 2040> filler;
  auto operator<=>(const WideKey&) const = default;
};

// An undo step needs room for an operation on its own table's tree, and a transaction's undo
// may come after others' on a shallower one: here one transaction changed a row of a deep
// table (wide keys: a few per node, several levels), then another filled the live undo with
// changes of a one-leaf table until the log refused one. Each change keeps room for the
// largest undo step of any table changed so far: before, it kept room for its own table's,
// and the first transaction's abort failed with "log full" (so would restart have, for ever).
TEST_P(EngineLogSpace, UndoOnADeepTableHasRoomAfterChangesOfAShallowOne) {
  const auto wide_key = [](std::uint64_t id) {
    WideKey key{id, {}};
    key.filler.fill(static_cast<std::uint8_t>(id));
    return key;
  };
  constexpr std::uint64_t kDeepRows = 400, kShallowRows = 40;
  const Architecture arch = GetParam();
  testing_support::DatabaseFiles files("tristore-log-space");
  Config config = small_rows_config(arch, files);
  auto db = Database::open(config);
  auto deep = db->create_table<WideKey, std::uint64_t>("deep");
  auto shallow = db->create_table<std::uint64_t, SmallRow>("shallow");
  for (std::uint64_t i = 0; i < kDeepRows; ++i) ASSERT_TRUE(deep.insert(wide_key(i), i));
  for (std::uint64_t i = 0; i < kShallowRows; ++i)
    ASSERT_TRUE(shallow.insert(i, make_small_row(i, 0)));
  Transaction on_deep = db->begin();
  ASSERT_TRUE(deep.update(on_deep, wide_key(kDeepRows / 2), 7));
  Transaction on_shallow = db->begin();
  std::uint64_t updates = 0;
  std::string message;
  try {
    for (std::uint64_t version = 1;; ++version)
      for (std::uint64_t key = 0; key < kShallowRows; ++key, ++updates)
        ASSERT_TRUE(shallow.update(on_shallow, key, make_small_row(key, version))) << key;
  } catch (const Error& error) {
    message = error.what();
  }
  std::printf("%llu updates of the shallow table, then: %s\n",
              static_cast<unsigned long long>(updates), message.c_str());
  EXPECT_NE(message.find("undo records"), std::string::npos) << message;
  std::string abort_error;
  try {
    on_deep.abort();
    on_shallow.abort();
  } catch (const Error& error) {
    abort_error = error.what();
  }
  ASSERT_EQ(abort_error, "") << "an abort failed";
  const auto expect_loaded = [&](Table<WideKey, std::uint64_t>& deep_rows,
                                 Table<std::uint64_t, SmallRow>& shallow_rows) {
    for (std::uint64_t i = 0; i < kDeepRows; ++i) {
      std::uint64_t value = 0;
      EXPECT_TRUE(deep_rows.get(wide_key(i), value) && value == i) << "deep " << i;
    }
    for (std::uint64_t i = 0; i < kShallowRows; ++i) {
      SmallRow row{};
      EXPECT_TRUE(shallow_rows.get(i, row) && row == make_small_row(i, 0)) << "shallow " << i;
    }
  };
  expect_loaded(deep, shallow);
  deep = Table<WideKey, std::uint64_t>(nullptr);
  shallow = Table<std::uint64_t, SmallRow>(nullptr);
  db.reset();
  config.open_mode = OpenMode::kOpenExisting;
  db = Database::open(config);
  auto deep_reopened = db->open_table<WideKey, std::uint64_t>("deep");
  auto shallow_reopened = db->open_table<std::uint64_t, SmallRow>("shallow");
  expect_loaded(deep_reopened, shallow_reopened);
}

// The log reserves an operation's bound (no page images: a few pages at most), a copy of the
// live undo and the checkpoint's own room; on a log of a few MiB that leaves a transaction
// undo up to about half the log, on every architecture. (Near that limit every operation
// checkpoints and copies all of it forward: a transaction should not live there.)
TEST_P(EngineLogSpace, LiveUndoReachesAboutHalfTheLog) {
  const Architecture arch = GetParam();
  testing_support::DatabaseFiles files("tristore-log-space");
  Config config = config_for(arch, files, true);
  config.nvm_bytes = 32 * kMiB;  // 4 MiB of log area
  auto db = Database::open(config);
  auto table = db->create_table<std::uint64_t, Row>("rows");
  load(table);
  Transaction txn = db->begin();
  const UndoFill fill = fill_undo_until_error(table, txn);
  const std::uint64_t area = nvm_log_bytes(config.nvm_bytes);
  std::printf("%s: live undo of %llu bytes stopped the transaction in a log area of %llu\n",
              std::string(architecture_name(arch)).c_str(), (unsigned long long)fill.live,
              (unsigned long long)area);
  EXPECT_GT(fill.live, area * 2 / 5) << fill.updates << " updates: " << fill.message;
  EXPECT_NE(fill.message.find("undo records"), std::string::npos) << fill.message;
  txn.abort();
  const Model seen = scan_all(table);
  EXPECT_TRUE(same(seen, loaded_model())) << difference(loaded_model(), seen);
}

INSTANTIATE_TEST_SUITE_P(Durable, EngineLogSpace, testing::ValuesIn(kDurable),
                         testing_support::ArchitectureTestName{});

// The sizing rule (a log of an eighth of NVM) serves a realistic long transaction on a small
// NVM: 1000 updates of YCSB's 1000-byte rows in one transaction, 24 MiB of NVM.
TEST(EngineLogSpaceSizing, ThousandUpdateYcsbTransactionFitsTheLogOf24MiBOfNvm) {
  struct YcsbRow {
    std::array<char, 1000> fields;
  };
  constexpr std::uint64_t kRecords = 4000;
  for (Architecture arch : kDurable) {
    SCOPED_TRACE(name(arch));
    testing_support::DatabaseFiles files("tristore-log-space");
    Config config = config_for(arch, files, true);
    config.nvm_bytes = 24 * kMiB;
    auto db = Database::open(config);
    auto table = db->create_table<std::uint64_t, YcsbRow>("usertable");
    table.bulk_load(kRecords, [](std::size_t i, std::uint64_t& key, YcsbRow& row) {
      key = i;
      row.fields.fill('a');
    });
    YcsbRow row;
    row.fields.fill('b');
    Transaction txn = db->begin();
    for (std::uint64_t n = 0; n < 1000; ++n) ASSERT_TRUE(table.update(txn, n * 17 % kRecords, row));
    txn.commit();
    YcsbRow seen;
    ASSERT_TRUE(table.get(999 * 17 % kRecords, seen));
    EXPECT_EQ(seen.fields[0], 'b');
  }
}

TEST(EngineLogSpaceOpen, LogTooSmallForTheLargestOperationIsAnErrorAtOpen) {
  for (Architecture arch : kDurable) {
    SCOPED_TRACE(name(arch));
    testing_support::DatabaseFiles files("tristore-log-space");
    Config config = config_for(arch, files, true);
    config.nvm_bytes = kMiB;  // 128 KiB of log
    std::string message;
    try {
      auto db = Database::open(config);
    } catch (const Error& error) {
      message = error.what();
    }
    EXPECT_NE(message.find("log area too small"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tristore
