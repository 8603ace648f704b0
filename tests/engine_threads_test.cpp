// Many threads on one Database, more threads than the machine has cores, on every
// architecture: bank transfers keep the sum and equal the serial order of their commits, with
// conflicts, aborts and retries; audits read a consistent sum; threads changing their own keys
// under eviction and frequent checkpoints always read back what they wrote, scans see their
// rows in order, and the table survives a close and reopen. Seeds printed; TRISTORE_SEED
// replays a thread's choices (not the interleaving). The ThreadSanitizer build runs it too
// (scripts/test.sh).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "architecture_test_name.hpp"
#include "common/error.hpp"
#include "engine/database.hpp"
#include "engine/lock_manager.hpp"
#include "engine/operation_latch.hpp"
#include "engine/table.hpp"
#include "engine/transaction_state.hpp"
#include "page_claims_test_support.hpp"
#include "test_support.hpp"

namespace tristore {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

struct Account {
  std::int64_t balance;
  std::uint64_t padding;
};

struct Row {
  std::uint64_t key;
  std::uint64_t version;
  std::uint64_t filler[14];  // 128-byte rows: the table outgrows the DRAM budget
};

Row make_row(std::uint64_t key, std::uint64_t version) {
  Row row{key, version, {}};
  for (std::uint64_t& word : row.filler) word = key * 31 + version;
  return row;
}

// The table holds exactly the union of the threads' models (key -> version), each row whole.
void expect_table_holds(Table<std::uint64_t, Row>& table,
                        const std::vector<std::map<std::uint64_t, std::uint64_t>>& models,
                        std::uint64_t seed) {
  std::map<std::uint64_t, std::uint64_t> all;
  for (const auto& model : models) all.insert(model.begin(), model.end());
  auto expected = all.begin();
  std::size_t seen = 0;
  table.scan(0, SIZE_MAX, [&](const std::uint64_t& key, const Row& row) {
    EXPECT_TRUE(expected != all.end() && expected->first == key) << "key " << key;
    if (expected == all.end()) return false;
    EXPECT_EQ(row.version, expected->second) << "key " << key;
    EXPECT_EQ(row.filler[13], key * 31 + expected->second) << "key " << key;
    ++expected;
    ++seen;
    return true;
  });
  EXPECT_EQ(seen, all.size()) << "seed " << seed;
}

// Runs body(thread) on `threads` threads and joins them; an exception in one is rethrown.
template <typename Body>
void on_threads(unsigned threads, Body&& body) {
  std::vector<std::thread> workers;
  std::mutex failure_mutex;
  std::exception_ptr failure;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      try {
        body(t);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  for (std::thread& worker : workers) worker.join();
  if (failure) std::rethrow_exception(failure);
}

// What only threads at work at the same time do (changes beside each other, the retries and
// splits beside them, misses served beside them) is the scheduler's to decide: threads that
// happen to run one after another (on a loaded machine, and a thread that has had the database
// to itself for 64 operations runs exclusively: OperationLatch::alone_here) show none of it. A
// test whose counters say its threads did not overlap runs again on a fresh database with the
// next seed, up to kOverlapTries times; every run checks its data itself. The last run's
// counters.
constexpr int kOverlapTries = 12;
template <typename Run, typename Overlapped>
Counters run_until_overlapping(std::uint64_t seed, Run&& run, Overlapped&& overlapped) {
  Counters counters = run(seed);
  for (int again = 1;
       again < kOverlapTries && !overlapped(counters) && !::testing::Test::HasFailure(); ++again) {
    std::printf("the threads did not overlap: again with seed %llu\n",
                static_cast<unsigned long long>(seed + again));
    counters = run(seed + again);
  }
  return counters;
}

// Stable keys 0, gap, 2 gap, ... (version 0) bulk-loaded into full leaves, and into `model`:
// an insert between two of them splits its leaf.
void load_stable_keys_into_full_leaves(Table<std::uint64_t, Row>& rows, std::uint64_t count,
                                       std::uint64_t gap,
                                       std::map<std::uint64_t, std::uint64_t>& model) {
  rows.bulk_load(
      count,
      [gap](std::size_t n, std::uint64_t& key, Row& row) {
        key = n * gap;
        row = make_row(key, 0);
      },
      1.0);
  for (std::uint64_t n = 0; n < count; ++n) model[n * gap] = 0;
}

class Threads : public ::testing::TestWithParam<Architecture> {
 protected:
  std::unique_ptr<Database> open(OpenMode mode = OpenMode::kCreateReplacing) {
    return Database::open(config(mode));
  }
  Config config(OpenMode mode) const {
    Config config;
    config.architecture = GetParam();
    // Buffered architectures get a pool far below the data: eviction runs all the time.
    config.dram_bytes = GetParam() == Architecture::kMainMemory ? 64 * kMiB : 1 * kMiB;
    config.nvm_bytes = GetParam() == Architecture::kNvmDirect ? 48 * kMiB : 6 * kMiB;
    config.ssd_bytes = 64 * kMiB;
    config.nvm_path = files_.nvm;
    config.ssd_path = files_.ssd;
    config.open_mode = mode;
    config.checkpoint_interval_bytes = 128 << 10;  // checkpoints while the threads run
    if (nvm_latency_) {
      config.nvm_read_ns = 1;
      config.nvm_write_ns = 1;
      config.llc_bytes = 64 << 10;
      config.nvm_wear_counting = true;
    }
    return config;
  }
  // A new database whose tables fit in DRAM.
  std::unique_ptr<Database> open_in_dram() {
    Config config;
    config.architecture = GetParam();
    config.dram_bytes = 64 * kMiB;
    config.nvm_bytes = 48 * kMiB;
    config.ssd_bytes = 64 * kMiB;
    config.nvm_path = files_.nvm;
    config.ssd_path = files_.ssd;
    config.open_mode = OpenMode::kCreateReplacing;
    return Database::open(config);
  }
  // Closes the database and opens it again: the table must still hold the models.
  void expect_table_survives_reopen(
      std::unique_ptr<Database>& db, Table<std::uint64_t, Row>& rows,
      const std::vector<std::map<std::uint64_t, std::uint64_t>>& models, std::uint64_t seed) {
    rows = Table<std::uint64_t, Row>(nullptr);
    db.reset();
    db = open(OpenMode::kOpenExisting);
    auto reopened = db->open_table<std::uint64_t, Row>("rows");
    expect_table_holds(reopened, models, seed);
  }
  testing_support::DatabaseFiles files_{"tristore-threads"};
  // open() injects NVM latency (a simulated LLC of 64 KiB) and counts wear.
  bool nvm_latency_ = false;
};

// Eight threads move money between 32 accounts in transactions (read both, write both); one
// in ten of their transactions is an audit that reads every account and must find the sum
// unchanged. Each committed transfer is recorded; applied to a model in any order, they must
// give the final table (they commute), and the sum must hold.
TEST_P(Threads, TransfersKeepTheSumAndAuditsSeeItWhole) {
  const std::uint64_t seed = testing_support::test_seed();
  auto db = open();
  auto accounts = db->create_table<std::uint64_t, Account>("accounts");
  constexpr std::uint64_t kAccounts = 32;
  constexpr std::int64_t kStart = 1000;
  for (std::uint64_t k = 0; k < kAccounts; ++k) ASSERT_TRUE(accounts.insert(k, {kStart, 0}));

  struct Transfer {
    std::uint64_t from, to;
    std::int64_t amount;
  };
  constexpr unsigned kThreads = 8;
  constexpr int kTransfersPerThread = 150;
  std::vector<std::vector<Transfer>> committed(kThreads);
  std::atomic<std::uint64_t> conflicts{0}, audits{0}, outside_reads{0};
  on_threads(kThreads, [&](unsigned t) {
    std::mt19937_64 random(seed * 1000003 + t);
    while (committed[t].size() < kTransfersPerThread) {
      try {
        if (random() % 10 == 0) {
          Transaction audit = db->begin();
          std::int64_t sum = 0;
          const std::size_t seen =
              accounts.scan(audit, 0, kAccounts, [&](const std::uint64_t&, const Account& a) {
                sum += a.balance;
                return true;
              });
          audit.commit();
          if (seen != kAccounts || sum != kStart * static_cast<std::int64_t>(kAccounts))
            throw Error(fmt::format("audit saw {} accounts summing to {}", seen, sum));
          ++audits;
          continue;
        }
        if (random() % 4 == 0) {  // a read outside any transaction sees no uncommitted row
          Account row;
          if (!accounts.get(random() % kAccounts, row)) throw Error("an account vanished");
          ++outside_reads;
        }
        Transfer transfer{random() % kAccounts, 0, static_cast<std::int64_t>(random() % 50)};
        transfer.to = (transfer.from + 1 + random() % (kAccounts - 1)) % kAccounts;
        Transaction txn = db->begin();
        Account from, to;
        if (!accounts.get(txn, transfer.from, from) || !accounts.get(txn, transfer.to, to))
          throw Error("an account vanished");
        accounts.update(txn, transfer.from, {from.balance - transfer.amount, 0});
        accounts.update(txn, transfer.to, {to.balance + transfer.amount, 0});
        txn.commit();
        committed[t].push_back(transfer);
      } catch (const LockConflict&) {
        ++conflicts;  // the transaction aborted as its handle went; retry
        std::this_thread::yield();
      }
    }
  });

  std::vector<std::int64_t> model(kAccounts, kStart);
  for (const auto& transfers : committed)
    for (const Transfer& transfer : transfers) {
      model[transfer.from] -= transfer.amount;
      model[transfer.to] += transfer.amount;
    }
  for (std::uint64_t k = 0; k < kAccounts; ++k) {
    Account row;
    ASSERT_TRUE(accounts.get(k, row));
    EXPECT_EQ(row.balance, model[k]) << "account " << k << ", seed " << seed;
  }
  std::printf("%u threads: %d transfers each, %llu audits, %llu reads outside, %llu conflicts\n",
              kThreads, kTransfersPerThread, static_cast<unsigned long long>(audits.load()),
              static_cast<unsigned long long>(outside_reads.load()),
              static_cast<unsigned long long>(conflicts.load()));
  EXPECT_GT(audits.load(), 0u);
}

// Six threads, each the only writer of its own keys (key % 6 == thread), insert, update and
// remove them at random outside transactions and check every read against their own model:
// a lost or misplaced write shows at once. Scans by each thread must return keys in order and,
// among its own keys, exactly its model. Data well beyond the DRAM budget and checkpoints
// every 128 KiB of log keep eviction and write-back running under the threads.
TEST_P(Threads, OwnKeysReadBackUnderEvictionAndCheckpointsAndSurviveReopen) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr unsigned kThreads = 6;
  constexpr std::uint64_t kKeys = 24'000;
  constexpr int kOpsPerThread = 2500;
  auto db = open();
  auto rows = db->create_table<std::uint64_t, Row>("rows");
  rows.bulk_load(kKeys / 2, [](std::size_t n, std::uint64_t& key, Row& row) {
    key = 2 * n;
    row = make_row(key, 0);
  });
  std::vector<std::map<std::uint64_t, std::uint64_t>> models(kThreads);  // key -> version
  for (std::uint64_t key = 0; key < kKeys; key += 2) models[key % kThreads][key] = 0;

  on_threads(kThreads, [&](unsigned t) {
    std::mt19937_64 random(seed * 7919 + t);
    auto& model = models[t];
    const auto fail_at = [&](int op, std::uint64_t key, const char* what) {
      throw Error(fmt::format("thread {} op {} key {}: {} (seed {})", t, op, key, what, seed));
    };
    for (int op = 0; op < kOpsPerThread; ++op) {
      const std::uint64_t key = (random() % (kKeys / kThreads)) * kThreads + t;
      const auto it = model.find(key);
      const std::uint64_t version = static_cast<std::uint64_t>(op) + 1;
      switch (random() % 8) {
        case 0:
        case 1:
          if (rows.insert(key, make_row(key, version)) != (it == model.end()))
            fail_at(op, key, "insert disagrees with the model");
          if (it == model.end()) model[key] = version;
          break;
        case 2:
        case 3:
          if (rows.update(key, make_row(key, version)) != (it != model.end()))
            fail_at(op, key, "update disagrees with the model");
          if (it != model.end()) it->second = version;
          break;
        case 4:
          if (rows.remove(key) != (it != model.end()))
            fail_at(op, key, "remove disagrees with the model");
          if (it != model.end()) model.erase(it);
          break;
        case 5: {
          const std::uint64_t from = random() % kKeys;
          std::vector<std::uint64_t> own;
          std::uint64_t last = 0;
          bool ordered = true, first = true;
          rows.scan(from, 60, [&](const std::uint64_t& k, const Row& row) {
            ordered &= first || k > last;
            first = false;
            last = k;
            if (row.key != k) ordered = false;
            if (k % kThreads == t) own.push_back(k);
            return true;
          });
          if (!ordered) fail_at(op, from, "scan out of order or a row under the wrong key");
          if (!first) {
            std::vector<std::uint64_t> expected;
            for (auto m = model.lower_bound(from); m != model.end() && m->first <= last; ++m)
              expected.push_back(m->first);
            if (own != expected) fail_at(op, from, "scan disagrees with the model");
          }
          break;
        }
        default: {
          Row row;
          const bool found = rows.get(key, row);
          if (found != (it != model.end())) fail_at(op, key, "get disagrees with the model");
          if (found && (row.version != it->second || row.key != key ||
                        row.filler[13] != key * 31 + it->second))
            fail_at(op, key, "get read another version");
        }
      }
    }
  });

  expect_table_holds(rows, models, seed);
  if (GetParam() == Architecture::kMainMemory) return;
  expect_table_survives_reopen(db, rows, models, seed);
}

// Four threads run transactions of one to four inserts, updates, removes and reads of their own
// keys (key % 4 == thread), committing seven in eight and aborting the rest, while the table grows
// past the DRAM budget. Most of them run side by side (tiers/resident_writes.hpp,
// tiers/main_memory_writes.hpp, tiers/nvm_direct_writes.hpp); those that merge a leaf or split
// one that cannot split beside them (the root leaf, a full parent), or miss with no frame
// free (or first fix a page since open on nvm-direct whose latch another
// holds) run again exclusively.
// Every read in a transaction sees the thread's model with its own pending changes, an abort puts
// back exactly its changes (step by step beside the others' changes; a step that misses or would
// split runs, with the rest of its abort, exclusively), and the table equals the models, also
// after a reopen.
TEST_P(Threads, TransactionsChangeSideBySideAndSplitsAndMissesRunAgainExclusively) {
  constexpr unsigned kThreads = 4;
  constexpr std::uint64_t kKeysPerThread = 3000;
  constexpr int kTransactionsPerThread = 1500;
  const Architecture arch = GetParam();
  const auto run = [&](std::uint64_t seed) {
    auto db = open();
    auto rows = db->create_table<std::uint64_t, Row>("rows");
    std::vector<std::map<std::uint64_t, std::uint64_t>> models(kThreads);  // key -> version

    on_threads(kThreads, [&](unsigned t) {
      std::mt19937_64 random(seed * 104729 + t);
      auto& model = models[t];
      const auto fail_at = [&](int n, std::uint64_t key, const char* what) {
        throw Error(
            fmt::format("thread {} transaction {} key {}: {} (seed {})", t, n, key, what, seed));
      };
      for (int n = 0; n < kTransactionsPerThread; ++n) {
        std::map<std::uint64_t, std::uint64_t> pending = model;
        Transaction txn = db->begin();
        const int ops = 1 + static_cast<int>(random() % 4);
        for (int op = 0; op < ops; ++op) {
          const std::uint64_t key = (random() % kKeysPerThread) * kThreads + t;
          const std::uint64_t version = static_cast<std::uint64_t>(n) * 8 + op + 1;
          const auto it = pending.find(key);
          Row row;
          const bool found = rows.get(txn, key, row);
          if (found != (it != pending.end())) fail_at(n, key, "get disagrees with the model");
          if (found && (row.version != it->second || row.filler[13] != key * 31 + it->second))
            fail_at(n, key, "get read another version");
          if (found && random() % 4 == 0) {
            if (!rows.remove(txn, key)) fail_at(n, key, "remove missed");
            pending.erase(key);
            continue;
          }
          if (found) {
            if (!rows.update(txn, key, make_row(key, version))) fail_at(n, key, "update missed");
          } else if (!rows.insert(txn, key, make_row(key, version))) {
            fail_at(n, key, "insert found the key");
          }
          pending[key] = version;
        }
        if (random() % 8 == 0) {
          txn.abort();
        } else {
          txn.commit();
          model = std::move(pending);
        }
      }
    });

    expect_table_holds(rows, models, seed);
    const Counters counters = db->counters();
    std::printf(
        "changes beside each other %llu, run again exclusively %llu (%llu for a split or "
        "merge), pages loaded beside them %llu; checkpoints %llu, %llu of them beside changes; "
        "undo steps of aborts beside changes %llu, run again exclusively %llu\n",
        static_cast<unsigned long long>(counters.changes_beside),
        static_cast<unsigned long long>(counters.changes_retried),
        static_cast<unsigned long long>(counters.structure_retried),
        static_cast<unsigned long long>(counters.changer_misses),
        static_cast<unsigned long long>(counters.log_checkpoints),
        static_cast<unsigned long long>(counters.log_checkpoints_beside),
        static_cast<unsigned long long>(counters.undo_steps_beside),
        static_cast<unsigned long long>(counters.undo_steps_retried));
    EXPECT_LE(counters.structure_retried, counters.changes_retried);
    if (arch != Architecture::kMainMemory) expect_table_survives_reopen(db, rows, models, seed);
    return counters;
  };
  // 12,000 rows of 128 bytes from an empty table: leaves split, beside the changes where
  // their parent has room, else run again exclusively. On the buffered
  // architectures pages are loaded beside the changes, into frames the changes' bring-ins
  // left free, and checkpoints write pages back beside them (the interval passes many times;
  // nvm-direct's pages are in place, its checkpoints seal them exclusively).
  const bool buffered = arch != Architecture::kMainMemory && arch != Architecture::kNvmDirect;
  const Counters counters =
      run_until_overlapping(testing_support::test_seed(), run, [&](const Counters& c) {
        return c.changes_beside > 0 && c.changes_retried > 0 && c.undo_steps_beside > 0 &&
               c.structure_retried + c.splits_beside > 0 &&
               (!buffered || (c.changer_misses > 0 && c.log_checkpoints_beside > 0));
      });
  EXPECT_GT(counters.changes_beside, 0u);
  EXPECT_GT(counters.changes_retried, 0u);
  EXPECT_GT(counters.undo_steps_beside, 0u);
  EXPECT_GT(counters.structure_retried + counters.splits_beside, 0u);
  if (buffered) {
    EXPECT_GT(counters.changer_misses, 0u);
    EXPECT_GT(counters.log_checkpoints_beside, 0u);
  }
}

// Changes outside transactions (autocommit) run side by side too, each a transaction of its
// own whose row lock is brief: four writers insert, update and remove their own keys (key % 4
// == writer) and all update 8 shared hot rows, while two readers get and scan outside
// transactions and one thread reads the hot rows in transactions. Writers and readers outside
// transactions wait for a brief lock rather than fail (any other error fails the test); the
// transaction meets one as a LockConflict, as a writer meets the transaction's locks, and each
// retries. Every row read is whole, and the writers' keys equal their models, also after a
// reopen.
TEST_P(Threads, ChangesOutsideTransactionsRunSideBySideAndWaitForEachOtherBriefly) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr unsigned kWriters = 4, kReaders = 2;
  constexpr std::uint64_t kKeysPerWriter = 2500, kHot = 8;
  constexpr int kChangesPerWriter = 3000, kReads = 3000, kTransactions = 400;
  auto db = open();
  auto rows = db->create_table<std::uint64_t, Row>("rows");
  auto hot = db->create_table<std::uint64_t, Row>("hot");
  for (std::uint64_t key = 0; key < kHot; ++key) ASSERT_TRUE(hot.insert(key, make_row(key, 0)));
  std::vector<std::map<std::uint64_t, std::uint64_t>> models(kWriters);
  const auto check_whole = [&](const Row& row, std::uint64_t key, const char* who) {
    if (row.key != key || row.filler[0] != key * 31 + row.version ||
        row.filler[13] != key * 31 + row.version)
      throw Error(fmt::format("{}: key {} read torn (seed {})", who, key, seed));
  };
  std::atomic<std::uint64_t> conflicts{0};

  on_threads(kWriters + kReaders + 1, [&](unsigned t) {
    std::mt19937_64 random(seed * 7121 + t);
    if (t < kWriters) {
      auto& model = models[t];
      for (int n = 1; n <= kChangesPerWriter; ++n) {
        const auto version = static_cast<std::uint64_t>(n);
        if (n % 4 == 0) {
          const std::uint64_t key = random() % kHot;
          for (;;) {  // the transaction's shared lock is a conflict, to retry
            try {
              if (!hot.update(key, make_row(key, version)))
                throw Error(fmt::format("writer {}: hot key {} vanished", t, key));
              break;
            } catch (const LockConflict&) {
              conflicts.fetch_add(1, std::memory_order_relaxed);
              std::this_thread::yield();
            }
          }
          continue;
        }
        const std::uint64_t key = (random() % kKeysPerWriter) * kWriters + t;
        const bool present = model.contains(key);
        if (present && random() % 3 == 0) {
          if (!rows.remove(key)) throw Error(fmt::format("writer {}: remove {} missed", t, key));
          model.erase(key);
        } else if (present) {
          if (!rows.update(key, make_row(key, version)))
            throw Error(fmt::format("writer {}: update {} missed", t, key));
          model[key] = version;
        } else {
          if (!rows.insert(key, make_row(key, version)))
            throw Error(fmt::format("writer {}: insert {} found the key", t, key));
          model[key] = version;
        }
      }
    } else if (t < kWriters + kReaders) {
      for (int n = 0; n < kReads; ++n) {
        Row row;
        const std::uint64_t key = random() % kHot;
        if (!hot.get(key, row)) throw Error(fmt::format("reader: hot key {} vanished", key));
        check_whole(row, key, "reader get");
        if (n % 16 == 0)
          hot.scan(0, kHot, [&](const std::uint64_t& k, const Row& r) {
            check_whole(r, k, "reader scan");
            return true;
          });
        const std::uint64_t other = random() % (kKeysPerWriter * kWriters);
        if (rows.get(other, row)) check_whole(row, other, "reader get");
      }
    } else {
      for (int n = 0; n < kTransactions; ++n) {
        try {
          Transaction txn = db->begin();
          Row row;
          for (std::uint64_t key = 0; key < kHot; key += 3) {
            if (!hot.get(txn, key, row))
              throw Error(fmt::format("transaction: hot key {} vanished", key));
            check_whole(row, key, "transaction get");
          }
          txn.commit();
        } catch (const LockConflict&) {
          conflicts.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
  });

  const Counters counters = db->counters();
  std::printf("changes beside each other %llu, run again exclusively %llu, conflicts %llu\n",
              static_cast<unsigned long long>(counters.changes_beside),
              static_cast<unsigned long long>(counters.changes_retried),
              static_cast<unsigned long long>(conflicts.load()));
  EXPECT_GT(counters.changes_beside, 0u);
  {  // No brief lock outlives its change: a transaction can change every row.
    Transaction txn = db->begin();
    for (std::uint64_t key = 0; key < kHot; ++key)
      ASSERT_TRUE(hot.update(txn, key, make_row(key, 0)));
    txn.commit();
  }
  expect_table_holds(rows, models, seed);
  if (GetParam() == Architecture::kMainMemory) return;
  expect_table_survives_reopen(db, rows, models, seed);
}

// Data in DRAM: reads outside transactions run side by side under the shared latch
// (tiers/resident_reads.hpp) while two writers update rows and checkpoint. No reader may see a
// row half written or a version older than one it saw before (a writer's versions only grow).
TEST_P(Threads, ReadersBesideWritersInDramSeeWholeRowsAndNeverGoBack) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr std::uint64_t kKeys = 2000;
  constexpr unsigned kReaders = 4, kWriters = 2;
  constexpr int kReads = 20000, kWrites = 1500;
  auto db = open_in_dram();
  auto rows = db->create_table<std::uint64_t, Row>("rows");
  rows.bulk_load(kKeys, [](std::size_t n, std::uint64_t& key, Row& row) {
    key = n;
    row = make_row(key, 0);
  });
  on_threads(kReaders + kWriters, [&](unsigned t) {
    std::mt19937_64 random(seed * 104729 + t);
    if (t < kWriters) {  // writer t owns the keys k % kWriters == t: its versions only grow
      for (int i = 1; i <= kWrites; ++i) {
        const std::uint64_t key = (random() % (kKeys / kWriters)) * kWriters + t;
        if (!rows.update(key, make_row(key, static_cast<std::uint64_t>(i))))
          throw Error(fmt::format("writer {}: key {} vanished", t, key));
        if (i % 500 == 0) db->checkpoint();
      }
      return;
    }
    std::vector<std::uint64_t> seen(kKeys, 0);
    for (int i = 0; i < kReads; ++i) {
      const std::uint64_t key = random() % kKeys;
      Row row;
      if (!rows.get(key, row)) throw Error(fmt::format("reader {}: key {} vanished", t, key));
      if (row.key != key || row.filler[0] != key * 31 + row.version ||
          row.filler[13] != key * 31 + row.version)
        throw Error(fmt::format("reader {}: key {} read torn (seed {})", t, key, seed));
      if (row.version < seen[key])
        throw Error(fmt::format("reader {}: key {} went back from version {} to {} (seed {})", t,
                                key, seen[key], row.version, seed));
      seen[key] = row.version;
    }
  });
}

// Lookups beside inserts and removes in the same leaves, in DRAM: writers insert and remove
// the keys between the stable ones (each change shifts the entries of its leaf), readers look
// up stable keys in transactions and outside them, and must find each one, whole, every time.
// Beside changes the buffer-managed architectures read leaves optimistically (no latch,
// validated by the frame's version): a lookup that took a leaf halfway through a shift would
// miss its key or read another row.
TEST_P(Threads, LookupsBesideInsertsAndRemovesInTheirLeavesFindEveryStableRow) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr std::uint64_t kStable = 3000, kGap = 4;  // stable keys 0, 4, 8, ...
  constexpr unsigned kReaders = 3, kWriters = 3;
  constexpr int kReads = 40000, kChanges = 20000;
  auto db = open_in_dram();
  auto rows = db->create_table<std::uint64_t, Row>("rows");
  rows.bulk_load(kStable, [](std::size_t n, std::uint64_t& key, Row& row) {
    key = n * kGap;
    row = make_row(key, 0);
  });
  std::vector<std::map<std::uint64_t, std::uint64_t>> models(kWriters + 1);
  for (std::uint64_t n = 0; n < kStable; ++n) models[kWriters][n * kGap] = 0;
  std::atomic<std::uint64_t> conflicts{0};
  on_threads(kReaders + kWriters, [&](unsigned t) {
    std::mt19937_64 random(seed * 15485863 + t);
    if (t < kWriters) {  // writer t owns the keys n * kGap + 1 + t
      auto& model = models[t];
      for (int i = 1; i <= kChanges; ++i) {
        const std::uint64_t key = (random() % kStable) * kGap + 1 + t;
        if (model.erase(key) == 1) {
          if (!rows.remove(key)) throw Error(fmt::format("writer {}: remove {} missed", t, key));
        } else {
          if (!rows.insert(key, make_row(key, 1)))
            throw Error(fmt::format("writer {}: insert {} found the key", t, key));
          model[key] = 1;
        }
      }
      return;
    }
    auto check = [&](bool found, const Row& row, std::uint64_t key, const char* how) {
      if (!found)
        throw Error(fmt::format("reader {}: {} missed stable key {} (seed {})", t, how, key, seed));
      if (row.key != key || row.version != 0 || row.filler[0] != key * 31 ||
          row.filler[13] != key * 31)
        throw Error(fmt::format("reader {}: {} of key {} read row {} version {} (seed {})", t, how,
                                key, row.key, row.version, seed));
    };
    for (int i = 0; i < kReads;) {
      if (random() % 2 == 0) {
        const std::uint64_t key = (random() % kStable) * kGap;
        Row row;
        check(rows.get(key, row), row, key, "get");
        ++i;
        continue;
      }
      try {
        Transaction txn = db->begin();
        for (int n = 0; n < 8; ++n, ++i) {
          const std::uint64_t key = (random() % kStable) * kGap;
          Row row;
          check(rows.get(txn, key, row), row, key, "get in a transaction");
        }
        txn.commit();
      } catch (const LockConflict&) {  // a brief lock of a writer's change outside transactions
        conflicts.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  const Counters counters = db->counters();
  std::printf(
      "changes beside each other %llu, leaf reads spoilt by a change %llu, conflicts %llu\n",
      static_cast<unsigned long long>(counters.changes_beside),
      static_cast<unsigned long long>(counters.leaf_reads_retried),
      static_cast<unsigned long long>(conflicts.load()));
  expect_table_holds(rows, models, seed);
}

// Leaves split beside the changes (common/structure_version.hpp): stable keys bulk-loaded into full
// leaves, four writers insert and remove their own keys between them (key % 8 == 1 + writer), in
// transactions and outside, so nearly every leaf splits, while two readers look stable keys up and
// scan, in transactions and outside. A descent that followed a parent halfway through a split, or
// kept a leaf whose upper half had moved on, would miss a stable key or scan out of order.
TEST_P(Threads, LeavesSplitBesideChangesWhileLookupsAndScansFindEveryStableRow) {
  constexpr std::uint64_t kStable = 2000, kGap = 8;  // stable keys 0, 8, 16, ...
  constexpr unsigned kWriters = 4, kReaders = 2;
  constexpr int kChanges = 4000, kReads = 6000;
  const auto run = [&](std::uint64_t seed) {
    auto db = open_in_dram();
    auto rows = db->create_table<std::uint64_t, Row>("rows");
    std::vector<std::map<std::uint64_t, std::uint64_t>> models(kWriters + 1);
    load_stable_keys_into_full_leaves(rows, kStable, kGap, models[kWriters]);
    std::atomic<std::uint64_t> conflicts{0};
    on_threads(kWriters + kReaders, [&](unsigned t) {
      std::mt19937_64 random(seed * 32452843 + t);
      const auto fail_at = [&](std::uint64_t key, const char* what) {
        throw Error(fmt::format("thread {} key {}: {} (seed {})", t, key, what, seed));
      };
      if (t < kWriters) {
        auto& model = models[t];
        for (int i = 0; i < kChanges;) {
          const std::uint64_t key = (random() % kStable) * kGap + 1 + t;
          const bool remove = model.count(key) == 1 && random() % 4 == 0;
          if (model.count(key) == 1 && !remove) continue;
          try {
            if (random() % 2 == 0) {
              if (remove ? !rows.remove(key) : !rows.insert(key, make_row(key, 1)))
                fail_at(key, remove ? "remove missed" : "insert found the key");
            } else {
              Transaction txn = db->begin();  // aborted on a conflict as it goes
              if (remove ? !rows.remove(txn, key) : !rows.insert(txn, key, make_row(key, 1)))
                fail_at(key, remove ? "remove in a transaction missed" : "insert found the key");
              txn.commit();
            }
          } catch (const LockConflict&) {  // a reader's transaction scanned the row: again
            conflicts.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
          ++i;
          if (remove)
            model.erase(key);
          else
            model[key] = 1;
        }
        return;
      }
      const auto check_scan = [&](std::uint64_t from, auto&& scan) {
        std::uint64_t next_stable = (from + kGap - 1) / kGap * kGap, last = 0;
        bool first = true;
        scan(from, [&](const std::uint64_t& key, const Row& row) {
          if (!first && key <= last) fail_at(key, "scan out of order");
          if (row.key != key || row.filler[13] != key * 31 + row.version)
            fail_at(key, "scan read a row under another key");
          if (key > next_stable) fail_at(next_stable, "scan passed a stable key");
          if (key == next_stable) next_stable += kGap;
          first = false;
          last = key;
          return true;
        });
      };
      for (int i = 0; i < kReads; ++i) {
        const std::uint64_t key = (random() % kStable) * kGap;
        try {
          Row row;
          switch (random() % 4) {
            case 0:
              if (!rows.get(key, row) || row.key != key || row.version != 0)
                fail_at(key, "get missed a stable key");
              break;
            case 1: {
              Transaction txn = db->begin();
              if (!rows.get(txn, key, row) || row.key != key || row.version != 0)
                fail_at(key, "get in a transaction missed a stable key");
              txn.commit();
              break;
            }
            case 2:
              check_scan(key,
                         [&](std::uint64_t from, auto&& visit) { rows.scan(from, 40, visit); });
              break;
            default: {
              Transaction txn = db->begin();
              check_scan(
                  key, [&](std::uint64_t from, auto&& visit) { rows.scan(txn, from, 40, visit); });
              txn.commit();
            }
          }
        } catch (const LockConflict&) {  // a writer's row, locked briefly or in its transaction
          conflicts.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
    const Counters counters = db->counters();
    std::printf(
        "changes beside each other %llu, run again exclusively %llu (%llu for a split or merge), "
        "leaves split beside them %llu, leaf reads spoilt %llu, conflicts %llu\n",
        static_cast<unsigned long long>(counters.changes_beside),
        static_cast<unsigned long long>(counters.changes_retried),
        static_cast<unsigned long long>(counters.structure_retried),
        static_cast<unsigned long long>(counters.splits_beside),
        static_cast<unsigned long long>(counters.leaf_reads_retried),
        static_cast<unsigned long long>(conflicts.load()));
    expect_table_holds(rows, models, seed);
    return counters;
  };
  // About 70 leaves' worth of rows inserted into full leaves (of them, those a thread inserts
  // while it has the database to itself split under the exclusive latch).
  const Counters counters = run_until_overlapping(
      testing_support::test_seed(), run, [&](const Counters& c) { return c.splits_beside > 0; });
  EXPECT_GT(counters.splits_beside, 0u);
}

// Leaves split beside the changes far beyond DRAM (a pool of 1 MiB, checkpoints every 128 KiB):
// four writers insert their own keys between stable keys bulk-loaded into full leaves, in
// transactions and outside, while misses swizzle swips into the parents being split and
// evictions unswizzle them (tiers/changer_splits.cpp), and two readers look stable keys up.
// A swip swizzled into a parent halfway through a split, a back-reference left at a moved
// swip, or a split page logged wrong would lose rows here or after the reopen.
TEST_P(Threads, LeavesSplitBesideChangesBeyondDramAndSurviveReopen) {
  constexpr std::uint64_t kStable = 6000, kGap = 8;  // ~3 MiB of rows once the writers are done
  constexpr unsigned kWriters = 4, kReaders = 2;
  constexpr int kInserts = 1500, kReads = 3000;
  const Architecture arch = GetParam();
  const auto run = [&](std::uint64_t seed) {
    auto db = open();
    auto rows = db->create_table<std::uint64_t, Row>("rows");
    std::vector<std::map<std::uint64_t, std::uint64_t>> models(kWriters + 1);
    load_stable_keys_into_full_leaves(rows, kStable, kGap, models[kWriters]);
    on_threads(kWriters + kReaders, [&](unsigned t) {
      std::mt19937_64 random(seed * 15485863 + t);
      const auto fail_at = [&](std::uint64_t key, const char* what) {
        throw Error(fmt::format("thread {} key {}: {} (seed {})", t, key, what, seed));
      };
      if (t < kWriters) {
        auto& model = models[t];
        for (int i = 0; i < kInserts;) {
          const std::uint64_t key = (random() % kStable) * kGap + 1 + t;
          if (model.count(key) == 1) continue;
          if (random() % 2 == 0) {
            if (!rows.insert(key, make_row(key, 1))) fail_at(key, "insert found the key");
          } else {
            Transaction txn = db->begin();
            if (!rows.insert(txn, key, make_row(key, 1))) fail_at(key, "insert found the key");
            txn.commit();
          }
          ++i;
          model[key] = 1;
        }
        return;
      }
      for (int i = 0; i < kReads; ++i) {
        const std::uint64_t key = (random() % kStable) * kGap;
        Row row;
        if (!rows.get(key, row) || row.key != key || row.version != 0)
          fail_at(key, "get missed a stable key");
      }
    });
    const Counters counters = db->counters();
    std::printf(
        "changes beside each other %llu, run again exclusively %llu (%llu for a split or merge), "
        "leaves split beside them %llu, DRAM evictions %llu\n",
        static_cast<unsigned long long>(counters.changes_beside),
        static_cast<unsigned long long>(counters.changes_retried),
        static_cast<unsigned long long>(counters.structure_retried),
        static_cast<unsigned long long>(counters.splits_beside),
        static_cast<unsigned long long>(counters.dram_evictions));
    expect_table_holds(rows, models, seed);
    if (arch != Architecture::kMainMemory) {
      expect_table_survives_reopen(db, rows, models, seed);
      // A split that ran again exclusively (its leaf not whole in DRAM beside the changes) had
      // allocated a leaf first, in no tree, written back by the next checkpoint: leaked.
      rows = Table<std::uint64_t, Row>(nullptr);
      db.reset();
      const page_claims::Pages pages =
          page_claims::pages_of_files<Row>(config(OpenMode::kOpenExisting), {"rows"});
      EXPECT_EQ(pages.in_use, pages.in_trees)
          << "pages in no tree after " << counters.changes_retried
          << " changes ran again exclusively (seed " << seed << ")";
    }
    return counters;
  };
  const Counters counters = run_until_overlapping(
      testing_support::test_seed(), run, [&](const Counters& c) { return c.splits_beside > 0; });
  EXPECT_GT(counters.splits_beside, 0u);
}

// Readers alone over a table far beyond DRAM (1 MiB for ~3 MiB of rows): every read's misses
// are served beside the other readers (appends, the miss latch, evictions, frames retired
// until the readers inside leave), and every row read is the row written.
TEST_P(Threads, ReadersBeyondDramMissSideBySideAndReadEveryRowRight) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr std::uint64_t kKeys = 20000;
  constexpr unsigned kReaders = 6;
  // ssd-bm's misses read whole pages from SSD: fewer of them.
  const int reads = GetParam() == Architecture::kSsdBm ? 300 : 4000;
  auto db = open();
  auto rows = db->create_table<std::uint64_t, Row>("rows");
  rows.bulk_load(kKeys, [](std::size_t n, std::uint64_t& key, Row& row) {
    key = n;
    row = make_row(key, 7);
  });
  db->checkpoint();
  const Counters before = db->counters();
  on_threads(kReaders, [&](unsigned t) {
    std::mt19937_64 random(seed * 7919 + t);
    for (int i = 0; i < reads; ++i) {
      const std::uint64_t key = random() % kKeys;
      Row row;
      if (!rows.get(key, row)) throw Error(fmt::format("reader {}: key {} vanished", t, key));
      if (row.key != key || row.version != 7 || row.filler[0] != key * 31 + 7 ||
          row.filler[13] != key * 31 + 7)
        throw Error(fmt::format("reader {}: key {} read wrong (seed {})", t, key, seed));
    }
  });
  const Counters during = db->counters() - before;
  // Then one reader alone: its misses take the miss latch too, and never find it held.
  on_threads(1, [&](unsigned) {
    std::mt19937_64 random(seed * 7919 + kReaders);
    Row row;
    for (int i = 0; i < reads; ++i) ASSERT_TRUE(rows.get(random() % kKeys, row));
  });
  const Counters alone = db->counters() - before - during;
  if (GetParam() != Architecture::kMainMemory && GetParam() != Architecture::kNvmDirect) {
    EXPECT_GT(during.reader_misses, 100u);
    EXPECT_GT(during.dram_evictions, 100u);
    EXPECT_GE(during.miss_latch_holds, during.reader_misses);
    EXPECT_LE(during.miss_latch_waits, during.miss_latch_holds);
    EXPECT_GT(alone.reader_misses, 0u);
    EXPECT_GE(alone.miss_latch_holds, alone.reader_misses);
    EXPECT_EQ(alone.miss_latch_waits, 0u) << "a reader alone found the miss latch held";
  }
  if (GetParam() == Architecture::kThreeTier) {
    EXPECT_GT(during.reader_appends, 100u);
  }
  std::printf("%u readers: miss latch %llu holds, %llu waits\n", kReaders,
              static_cast<unsigned long long>(during.miss_latch_holds),
              static_cast<unsigned long long>(during.miss_latch_waits));
}

// With NVM latency injected and wear counted, threads charge the device side by side (the
// simulated LLC latched per stripe of sets, wear counted atomically): transactions change
// their own rows and read others' beside each other on every architecture with NVM,
// nvm-direct's too, and 3tier's reads beyond DRAM append lines beside each other; every row
// read is whole, and the table equals the threads' models, also after a reopen.
TEST_P(Threads, WithNvmLatencyInjectedReadsAndChangesStillRunSideBySide) {
  constexpr unsigned kThreads = 4;
  constexpr std::uint64_t kKeys = 8000;
  constexpr int kTransactionsPerThread = 600;
  const Architecture arch = GetParam();
  if (arch == Architecture::kMainMemory || arch == Architecture::kSsdBm)
    GTEST_SKIP() << "no NVM data tier to charge";
  nvm_latency_ = true;
  const auto run = [&](std::uint64_t seed) {
    auto db = open();
    auto rows = db->create_table<std::uint64_t, Row>("rows");
    rows.bulk_load(kKeys, [](std::size_t n, std::uint64_t& key, Row& row) {
      key = n;
      row = make_row(key, 0);
    });
    db->checkpoint();
    const Counters before = db->counters();
    // Thread t updates the keys k with k % kThreads == t and reads any key.
    std::vector<std::map<std::uint64_t, std::uint64_t>> models(kThreads);
    for (std::uint64_t key = 0; key < kKeys; ++key) models[key % kThreads][key] = 0;
    on_threads(kThreads, [&](unsigned t) {
      std::mt19937_64 random(seed * 6151 + t);
      auto& model = models[t];
      for (int n = 0; n < kTransactionsPerThread; ++n) {
        Transaction txn = db->begin();
        std::map<std::uint64_t, std::uint64_t> pending = model;
        // Another thread's row read: a transaction that meets the other's lock (NO_WAIT) ends.
        try {
          for (int op = 0; op < 3; ++op) {
            const std::uint64_t key = (random() % (kKeys / kThreads)) * kThreads + t;
            const std::uint64_t version = static_cast<std::uint64_t>(n) * 4 + op + 1;
            if (!rows.update(txn, key, make_row(key, version)))
              throw Error(fmt::format("thread {}: key {} missing (seed {})", t, key, seed));
            pending[key] = version;
          }
          const std::uint64_t other = random() % kKeys;
          Row row;
          if (!rows.get(txn, other, row) || row.key != other ||
              row.filler[13] != other * 31 + row.version)
            throw Error(fmt::format("thread {}: key {} read wrong (seed {})", t, other, seed));
        } catch (const LockConflict&) {
          txn.abort();
          continue;
        }
        if (random() % 8 == 0) {
          txn.abort();
        } else {
          txn.commit();
          model = std::move(pending);
        }
      }
    });
    const Counters during = db->counters() - before;
    std::printf(
        "changes beside each other %llu, run again exclusively %llu; reader appends %llu, "
        "misses %llu; simulated LLC misses %llu\n",
        static_cast<unsigned long long>(during.changes_beside),
        static_cast<unsigned long long>(during.changes_retried),
        static_cast<unsigned long long>(during.reader_appends),
        static_cast<unsigned long long>(during.reader_misses),
        static_cast<unsigned long long>(during.llc_misses));
    expect_table_holds(rows, models, seed);
    EXPECT_GT(during.llc_misses, 0u);
    EXPECT_TRUE(db->nvm_wear() != nullptr && db->nvm_wear()->total() > 0) << "wear counted";
    expect_table_survives_reopen(db, rows, models, seed);
    return during;
  };
  const Counters during =
      run_until_overlapping(testing_support::test_seed(), run, [&](const Counters& c) {
        return c.changes_beside > 0 && (arch != Architecture::kThreeTier || c.reader_appends > 0);
      });
  EXPECT_GT(during.changes_beside, 0u);
  if (arch == Architecture::kThreeTier) {
    EXPECT_GT(during.reader_appends, 0u);
  }
}

// A change outside transactions, or a read in a transaction, beside others (a thread not yet
// alone: the latch is new) that finds its leaf missing from DRAM loads it into a free frame
// under the miss latch, beside the other changes (changer_misses: from NVM, or read from SSD
// outside the latch), and runs beside others at once: nothing evicted, nothing run again.
// (main-memory and nvm-direct keep every page in place.)
class ThreadsMissingPages : public Threads {
 protected:
  static constexpr std::uint64_t kKeys = 20000;
  // The key a test reads or changes: two leaves on from key 0, its search in the root over
  // the lines key 0's searched (3tier loads only those).
  static constexpr std::uint64_t kKey = 250;

  // A table beyond DRAM, reopened so that none of it is in DRAM, then key 0 changed: the
  // tree's height known (a change beside others needs it) and the root in DRAM.
  void SetUp() override {
    db_ = open();
    auto rows = db_->create_table<std::uint64_t, Row>("rows");
    rows.bulk_load(kKeys, [](std::size_t n, std::uint64_t& key, Row& row) {
      key = n;
      row = make_row(key, 7);
    });
    rows = Table<std::uint64_t, Row>(nullptr);
    db_.reset();
    db_ = open(OpenMode::kOpenExisting);
    rows_ = db_->open_table<std::uint64_t, Row>("rows");
    ASSERT_TRUE(rows_.update(0, make_row(0, 8)));
    before_ = db_->counters();
  }
  void expect_leaf_loaded_beside() {
    const Counters during = db_->counters() - before_;
    EXPECT_EQ(during.changes_retried, 0u) << "no try stopped at the miss";
    EXPECT_EQ(during.changes_beside, 1u) << "run beside others, not exclusively";
    EXPECT_GE(during.changer_misses, 1u) << "the leaf loaded beside the changes";
    EXPECT_EQ(during.reader_misses, 0u) << "nothing brought in as a reader";
    EXPECT_EQ(during.dram_evictions, 0u) << "into a free frame";
  }

  std::unique_ptr<Database> db_;
  Table<std::uint64_t, Row> rows_{nullptr};
  Counters before_;
};

TEST_P(ThreadsMissingPages, AChangeOutsideTransactionsLoadsTheLeafItMisses) {
  ASSERT_TRUE(rows_.update(kKey, make_row(kKey, 8)));
  expect_leaf_loaded_beside();
  Row row;
  ASSERT_TRUE(rows_.get(kKey, row));
  EXPECT_EQ(row.version, 8u);
  EXPECT_EQ(row.filler[13], kKey * 31 + 8);
}

TEST_P(ThreadsMissingPages, AReadInATransactionLoadsTheLeafItMisses) {
  Transaction txn = db_->begin();
  Row row;
  ASSERT_TRUE(rows_.get(txn, kKey, row));
  txn.commit();
  expect_leaf_loaded_beside();
  EXPECT_EQ(row.version, 7u);
  EXPECT_EQ(row.filler[13], kKey * 31 + 7);
}

// With no frame free (a thread alone filled DRAM under the exclusive latch, which evicts on
// demand), changes beside others evict ahead and load their leaves into the frames let go
// before them. The first may stop (what it let go waits for it to leave; a mini page may
// still find room) and bring its path in as a reader; none after it.
TEST_P(ThreadsMissingPages, WithNoFrameFreeChangesEvictAheadAndLoadBesideOthers) {
  constexpr std::uint64_t kChanges = 48;  // more leaves than DRAM can have left free
  constexpr std::uint64_t kStep = kKeys / 2 / kChanges;
  std::thread([&] {  // alone after a few changes: exclusive; every leaf whole in a full frame
    for (std::uint64_t key = 0; key < kKeys / 2; ++key)
      ASSERT_TRUE(rows_.update(key, make_row(key, 8)));
  })
      .join();
  before_ = db_->counters();
  std::thread([&] {  // a thread new to the latch: beside others
    for (std::uint64_t i = 0; i < kChanges; ++i) {
      const std::uint64_t key = kKeys / 2 + i * kStep;
      ASSERT_TRUE(rows_.update(key, make_row(key, 9)));
    }
  })
      .join();
  const Counters during = db_->counters() - before_;
  std::printf("retried %llu, reader misses %llu, changer misses %llu, evictions %llu\n",
              static_cast<unsigned long long>(during.changes_retried),
              static_cast<unsigned long long>(during.reader_misses),
              static_cast<unsigned long long>(during.changer_misses),
              static_cast<unsigned long long>(during.dram_evictions));
  EXPECT_LE(during.changes_retried, 1u) << "only the first may stop";
  EXPECT_GE(during.dram_evictions, 1u);
  EXPECT_GE(during.changer_misses, kChanges / 2) << "most leaves loaded beside others";
  EXPECT_GE(during.changes_beside, kChanges / 2);
  for (std::uint64_t key = 0; key < kKeys; ++key) {
    Row row;
    ASSERT_TRUE(rows_.get(key, row)) << key;
    const bool second =
        key >= kKeys / 2 && (key - kKeys / 2) % kStep == 0 && (key - kKeys / 2) / kStep < kChanges;
    const std::uint64_t version = key < kKeys / 2 ? 8 : second ? 9 : 7;
    ASSERT_EQ(row.version, version) << key;
    ASSERT_EQ(row.filler[13], key * 31 + version) << key;
  }
}

// Scans in transactions over leaves beyond DRAM (on 3tier, leaves on mini pages a scan
// promotes beside the changes), beside a thread updating rows in transactions and a reader
// outside transactions whose misses evict: every scan sees its rows in order, none missing,
// each row whole, no row's version going back; and the table holds every update at the end.
// Four threads on two cores.
TEST_P(ThreadsMissingPages, ScansInTransactionsBeyondDramSeeWholeRowsBesideChangesAndEvictions) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr unsigned kScanners = 2;
  constexpr int kScans = 120;
  constexpr int kUpdates = 1500;
  std::atomic<unsigned> scanners_left{kScanners};
  std::vector<std::uint64_t> versions(kKeys, 7);  // the updater's, read at the end
  versions[0] = 8;
  std::atomic<unsigned> started{0};
  on_threads(kScanners + 2, [&](unsigned t) {
    std::mt19937_64 random(seed + t);
    started.fetch_add(1);  // all at once, not one after another
    while (started.load() < kScanners + 2) std::this_thread::yield();
    if (t < kScanners) {
      std::vector<std::uint64_t> seen(kKeys, 0);  // the newest version this scanner saw
      for (int scan = 0; scan < kScans; ++scan) {
        const std::uint64_t from = random() % kKeys;
        const std::size_t limit = 1 + random() % 200;
        for (bool done = false; !done;) {
          std::uint64_t next = from;
          try {
            Transaction txn = db_->begin();
            rows_.scan(txn, from, limit, [&](const std::uint64_t& key, const Row& row) {
              if (key != next || row.key != key || row.filler[0] != key * 31 + row.version ||
                  row.filler[13] != key * 31 + row.version || row.version < seen[key])
                throw Error(
                    fmt::format("scanner {}: key {} (expected {}) seen torn or old "
                                "(version {}, seen {}; seed {})",
                                t, key, next, row.version, seen[key], seed));
              seen[key] = row.version;
              ++next;
              return true;
            });
            txn.commit();
            done = true;
          } catch (const LockConflict&) {  // a row the updater holds: scan again
            continue;
          }
          const std::uint64_t expected_end = std::min<std::uint64_t>(from + limit, kKeys);
          if (next != expected_end)
            throw Error(
                fmt::format("scanner {}: scan from {} limit {} ended at {}, not {} "
                            "(seed {})",
                            t, from, limit, next, expected_end, seed));
        }
      }
      scanners_left.fetch_sub(1);
    } else if (t == kScanners) {
      for (int update = 0; update < kUpdates || scanners_left.load() > 0; ++update) {
        const std::uint64_t key = random() % kKeys;
        try {
          Transaction txn = db_->begin();
          ASSERT_TRUE(rows_.update(txn, key, make_row(key, versions[key] + 1)));
          txn.commit();
          ++versions[key];
        } catch (const LockConflict&) {
        }
      }
    } else {
      Row row;
      while (scanners_left.load() > 0) {
        const std::uint64_t key = random() % kKeys;
        try {
          if (!rows_.get(key, row) || row.key != key || row.filler[13] != key * 31 + row.version)
            throw Error(fmt::format("reader: key {} read wrong (seed {})", key, seed));
        } catch (const LockConflict&) {  // the updater's open transaction holds the row
        }
      }
    }
  });
  const Counters during = db_->counters() - before_;
  std::printf(
      "seed %llu: changes beside %llu, run again %llu, changer misses %llu, reader "
      "misses %llu, evictions %llu, promotions %llu\n",
      static_cast<unsigned long long>(seed), static_cast<unsigned long long>(during.changes_beside),
      static_cast<unsigned long long>(during.changes_retried),
      static_cast<unsigned long long>(during.changer_misses),
      static_cast<unsigned long long>(during.reader_misses),
      static_cast<unsigned long long>(during.dram_evictions),
      static_cast<unsigned long long>(during.mini_page_promotions));
  EXPECT_GT(during.changer_misses, 0u) << "scans and updates loaded beside the changes";
  EXPECT_GT(during.dram_evictions, 0u) << "the reader's misses evicted";
  std::vector<std::map<std::uint64_t, std::uint64_t>> model(1);
  for (std::uint64_t key = 0; key < kKeys; ++key) model[0][key] = versions[key];
  expect_table_holds(rows_, model, seed);
}

// 3tier: a leaf a reader left on a mini page (a few lines of it) is changed where it is once
// the runs its change writes are resident there; a change that needs more lines loads just
// them beside others (appended to the mini page, or with the page moved to a sorted copy or
// to a full frame holding only some lines) and runs at once. The change must survive a
// reopen: the checkpoint writes back what changed beside others.
class ThreeTierChangesWhereTheLeafIs : public ThreadsMissingPages {
 protected:
  void SetUp() override {
    if (GetParam() != Architecture::kThreeTier) GTEST_SKIP() << "3tier alone has mini pages";
    ThreadsMissingPages::SetUp();
  }
  void reopen() {
    rows_ = Table<std::uint64_t, Row>(nullptr);
    db_.reset();
    db_ = open(OpenMode::kOpenExisting);
    rows_ = db_->open_table<std::uint64_t, Row>("rows");
  }
  void expect_row(std::uint64_t key, std::uint64_t version) {
    Row row;
    ASSERT_TRUE(rows_.get(key, row)) << key;
    EXPECT_EQ(row.version, version) << key;
    EXPECT_EQ(row.filler[13], key * 31 + version) << key;
  }
};

TEST_P(ThreeTierChangesWhereTheLeafIs, AnUpdateOfLinesOnAMiniPageRunsBesideAtOnce) {
  Row row;
  ASSERT_TRUE(rows_.get(kKey, row));  // outside transactions: the leaf onto a mini page
  before_ = db_->counters();
  ASSERT_TRUE(rows_.update(kKey, make_row(kKey, 9)));
  const Counters during = db_->counters() - before_;
  EXPECT_EQ(during.changes_retried, 0u) << "its lines were there: nothing to bring in";
  EXPECT_EQ(during.changes_beside, 1u);
  EXPECT_EQ(during.mini_page_promotions, 0u) << "changed on its mini page";
  EXPECT_EQ(during.nvm_lines_read, 0u);
  expect_row(kKey, 9);
  reopen();
  expect_row(kKey, 9);
  expect_row(kKey + 1, 7);
}

// Some of the row's lines on the mini page, not all: the mini page is sorted into a copy with
// the others, beside the changes, and the change moves there with its latch.
TEST_P(ThreeTierChangesWhereTheLeafIs, AnUpdateOfLinesNotOnItsMiniPageMovesToASortedCopy) {
  std::uint64_t version = 0;  // the first 8 bytes of the value: its key, one line
  ASSERT_TRUE(rows_.get_part(kKey, offsetof(Row, version), sizeof(version), &version));
  EXPECT_EQ(version, 7u);
  before_ = db_->counters();
  ASSERT_TRUE(rows_.update(kKey, make_row(kKey, 9)));
  const Counters during = db_->counters() - before_;
  EXPECT_EQ(during.changes_retried, 0u) << "nothing brought in, nothing run again";
  EXPECT_EQ(during.changes_beside, 1u);
  EXPECT_EQ(during.reader_misses, 0u);
  EXPECT_GE(during.changer_misses, 1u);
  EXPECT_EQ(during.mini_page_copies, 1u) << "sorted into a copy beside the changes";
  EXPECT_EQ(during.mini_page_promotions, 0u) << "the row's lines fit its mini page";
  EXPECT_LE(during.nvm_lines_read, 2u) << "the row's other line, not the page";
  expect_row(kKey, 9);
  reopen();
  expect_row(kKey, 9);
}

// Lines that simply append to the leaf's mini page (none of them there yet) are loaded by the
// change itself, beside others, under its leaf's latch: nothing to bring in, no retry.
TEST_P(ThreeTierChangesWhereTheLeafIs, AnUpdateOfLinesThatAppendToItsMiniPageLoadsThemBeside) {
  Row row;
  ASSERT_TRUE(rows_.get(kKey, row));  // the leaf onto a mini page: kKey's value, not kKey + 1's
  before_ = db_->counters();
  ASSERT_TRUE(rows_.update(kKey + 1, make_row(kKey + 1, 9)));
  const Counters during = db_->counters() - before_;
  EXPECT_EQ(during.changes_retried, 0u) << "its lines appended where it ran";
  EXPECT_EQ(during.changes_beside, 1u);
  EXPECT_EQ(during.reader_misses, 0u) << "nothing brought in";
  EXPECT_GE(during.reader_appends, 1u);
  EXPECT_EQ(during.mini_page_promotions, 0u);
  EXPECT_LE(during.nvm_lines_read, 2u) << "the row's two lines";
  expect_row(kKey + 1, 9);
  expect_row(kKey, 7);
  reopen();
  expect_row(kKey + 1, 9);
  expect_row(kKey, 7);
}

// A remove shifts every entry after it: more lines than a mini page holds. The change's load
// promotes the mini page to a full frame with those lines only, beside the changes, and the
// change runs there, on a frame that is not whole.
TEST_P(ThreeTierChangesWhereTheLeafIs, ARemoveShiftingMoreThanAMiniPageIsPromotedBeside) {
  Row row;
  ASSERT_TRUE(rows_.get(kKey, row));
  before_ = db_->counters();
  ASSERT_TRUE(rows_.remove(kKey));
  const Counters during = db_->counters() - before_;
  EXPECT_EQ(during.changes_retried, 0u) << "nothing brought in, nothing run again";
  EXPECT_EQ(during.changes_beside, 1u);
  EXPECT_EQ(during.reader_misses, 0u);
  EXPECT_GE(during.changer_misses, 1u);
  EXPECT_EQ(during.mini_page_promotions, 1u);
  EXPECT_LT(during.nvm_lines_read, kPageSize / kCacheLineSize)
      << "the lines the remove shifts, not the whole page";
  EXPECT_FALSE(rows_.get(kKey, row));
  for (std::uint64_t key : {kKey - 1, kKey + 1, kKey + 50}) expect_row(key, 7);
  reopen();
  EXPECT_FALSE(rows_.get(kKey, row));
  for (std::uint64_t key : {kKey - 1, kKey + 1, kKey + 50}) expect_row(key, 7);
}

// A scan in a transaction copies its leaf whole. On a mini page, the leaf is latched
// exclusively (not shared) and promoted beside the changes, with the lines the mini page
// lacks: nothing brought in, nothing run again.
TEST_P(ThreeTierChangesWhereTheLeafIs, AScanInATransactionPromotesItsMiniPageLeafBeside) {
  Row row;
  ASSERT_TRUE(rows_.get(kKey, row));  // the leaf onto a mini page
  before_ = db_->counters();
  Transaction txn = db_->begin();
  std::vector<std::uint64_t> keys;
  rows_.scan(txn, kKey - 2, 5, [&](const std::uint64_t& key, const Row& seen) {
    keys.push_back(key);
    EXPECT_EQ(seen.version, 7u) << key;
    EXPECT_EQ(seen.filler[13], key * 31 + 7) << key;
    return true;
  });
  txn.commit();
  const Counters during = db_->counters() - before_;
  EXPECT_EQ(keys, (std::vector<std::uint64_t>{kKey - 2, kKey - 1, kKey, kKey + 1, kKey + 2}));
  EXPECT_EQ(during.changes_retried, 0u) << "nothing brought in, nothing run again";
  EXPECT_EQ(during.reader_misses, 0u);
  EXPECT_GE(during.changer_misses, 1u);
  EXPECT_EQ(during.mini_page_promotions, 1u) << "promoted beside the changes";
  EXPECT_GT(during.nvm_lines_read, 16u) << "the lines its mini page lacked";
  expect_row(kKey, 7);
}

INSTANTIATE_TEST_SUITE_P(ThreeTier, ThreeTierChangesWhereTheLeafIs,
                         ::testing::Values(Architecture::kThreeTier),
                         testing_support::ArchitectureTestName{});

INSTANTIATE_TEST_SUITE_P(BufferManaged, ThreadsMissingPages,
                         ::testing::Values(Architecture::kThreeTier, Architecture::kBasicNvm,
                                           Architecture::kSsdBm),
                         testing_support::ArchitectureTestName{});

// Scans in a transaction copy a few rows first, then twice as many each time, going on after
// the last row visited (tables on the buffer manager): for every start, limit and early stop,
// a scan visits exactly the rows a model gives, in order, once each, beside a thread that
// keeps changing other rows of the table.
TEST_P(Threads, ScansInTransactionsGoOnAfterTheLastRowVisitedAndVisitEachRowOnce) {
  const std::uint64_t seed = testing_support::test_seed();
  auto db = open();
  auto rows = db->create_table<std::uint64_t, Account>("rows");
  constexpr std::uint64_t kKeys = 3000;
  rows.bulk_load(
      kKeys,
      [](std::size_t n, std::uint64_t& key, Account& account) {
        key = 2 * n;  // even keys: the scanned ones
        account = {static_cast<std::int64_t>(n), 0};
      },
      0.7);
  std::atomic<bool> done{false};
  std::thread changer([&] {  // odd keys come and go meanwhile, in transactions
    std::mt19937_64 random(seed);
    while (!done.load()) {
      const std::uint64_t key = 2 * (random() % kKeys) + 1;
      try {
        Transaction txn = db->begin();
        if (!rows.insert(txn, key, {1, 0})) rows.remove(txn, key);
        txn.commit();
      } catch (const LockConflict&) {
      }
    }
  });
  struct StopChanger {  // also when an assertion returns early
    std::atomic<bool>& done;
    std::thread& changer;
    ~StopChanger() {
      done = true;
      changer.join();
    }
  } stop_changer{done, changer};
  std::mt19937_64 random(seed + 1);
  for (int round = 0; round < 200; ++round) {
    const std::uint64_t from = random() % (2 * kKeys + 10);
    const std::size_t limit = 1 + random() % 300;
    const std::size_t stop_after = random() % 2 == 0 ? limit : 1 + random() % limit;
    std::vector<std::uint64_t> seen;
    std::size_t visited = 0;
    bool ok = false;
    while (!ok) {
      seen.clear();
      visited = 0;
      try {
        Transaction txn = db->begin();
        rows.scan(txn, from, limit, [&](const std::uint64_t& key, const Account& account) {
          ++visited;
          if (key % 2 == 0) {
            EXPECT_EQ(account.balance, static_cast<std::int64_t>(key / 2)) << "key " << key;
            seen.push_back(key);
          }
          return seen.size() < stop_after;
        });
        txn.commit();
        ok = true;
      } catch (const LockConflict&) {  // an odd row the changer holds: scan again
      }
    }
    std::vector<std::uint64_t> expected;
    for (std::uint64_t key = (from + 1) / 2 * 2; key < 2 * kKeys && expected.size() < stop_after;
         key += 2)
      expected.push_back(key);
    // The limit counts odd rows too: a scan that reached it may have fewer even rows.
    if (visited < limit) {
      ASSERT_EQ(seen, expected) << "from " << from << " limit " << limit << ", seed " << seed;
    } else {
      ASSERT_EQ(visited, limit) << "round " << round << ", seed " << seed;
      ASSERT_LE(seen.size(), expected.size()) << "round " << round << ", seed " << seed;
      expected.resize(seen.size());
      ASSERT_EQ(seen, expected) << "from " << from << " limit " << limit << ", seed " << seed;
    }
  }
}

// A scan's visit function may read the database (the latch is held once more) but not change
// it: that would wait for itself, or change what the scan is reading. It gets an Error, and
// the database stays usable.
TEST_P(Threads, AScansVisitMayReadButAChangeFromInsideIsAnErrorNotAHang) {
  auto db = open();
  auto rows = db->create_table<std::uint64_t, Row>("rows");
  for (std::uint64_t key = 0; key < 10; ++key) ASSERT_TRUE(rows.insert(key, make_row(key, 1)));
  std::uint64_t read_inside = 0;
  rows.scan(0, 10, [&](const std::uint64_t& key, const Row&) {
    Row row;
    read_inside += rows.get(9 - key, row) && row.key == 9 - key;
    return true;
  });
  EXPECT_EQ(read_inside, 10u);
  EXPECT_THROW(rows.scan(0, 10,
                         [&](const std::uint64_t& key, const Row&) {
                           return rows.update(key, make_row(key, 2));
                         }),
               Error);
  Transaction txn = db->begin();
  EXPECT_THROW(rows.scan(txn, 0, 10,
                         [&](const std::uint64_t& key, const Row&) {
                           return rows.update(txn, key, make_row(key, 2));
                         }),
               Error);
  txn.abort();
  EXPECT_THROW(
      rows.scan(0, 10, [&](const std::uint64_t&, const Row&) { return db->begin().active(); }),
      Error);
  Row row;
  EXPECT_TRUE(rows.get(3, row));
  EXPECT_EQ(row.version, 1u);
  EXPECT_TRUE(rows.insert(11, make_row(11, 1)));
  EXPECT_EQ(rows.scan(0, SIZE_MAX, [](const std::uint64_t&, const Row&) { return true; }), 11u);
}

// A scan's visit function may read in a transaction too, whether the scan goes leaf by leaf
// (a thread that has not had the database to itself) or in place (one that has, after many
// operations alone). Found by a review: in place, main-memory and nvm-direct held the latch
// shared for the scan, and the transaction's read, which runs exclusively, was an Error, but
// only once the thread was alone.
TEST_P(Threads, AScansVisitMayReadInATransactionAloneOrNot) {
  auto db = open();
  auto rows = db->create_table<std::uint64_t, Row>("rows");
  for (std::uint64_t key = 0; key < 10; ++key) ASSERT_TRUE(rows.insert(key, make_row(key, 1)));
  const auto scan_reading_in_a_transaction = [&] {
    Transaction txn = db->begin();
    std::uint64_t read_inside = 0;
    rows.scan(0, 10, [&](const std::uint64_t& key, const Row&) {
      Row row;
      read_inside += rows.get(txn, 9 - key, row) && row.key == 9 - key;
      return true;
    });
    txn.commit();
    return read_inside;
  };
  EXPECT_EQ(scan_reading_in_a_transaction(), 10u) << "the thread's first scan";
  // Changes ask whether the thread is alone (OperationLatch::alone_here): after 64 in a row
  // with nobody else, it is.
  for (std::uint64_t i = 0; i < 4 * 64; ++i) ASSERT_TRUE(rows.update(i % 10, make_row(i % 10, 1)));
  EXPECT_EQ(scan_reading_in_a_transaction(), 10u) << "a scan of a thread alone for a while";
}

INSTANTIATE_TEST_SUITE_P(EveryArchitecture, Threads,
                         ::testing::Values(Architecture::kMainMemory, Architecture::kThreeTier,
                                           Architecture::kBasicNvm, Architecture::kNvmDirect,
                                           Architecture::kSsdBm),
                         testing_support::ArchitectureTestName{});

// Under the exclusive latch the lock table takes no partition latch (a thread alone), so a look
// into it from outside the latch (a scan waiting between its copies for a brief row lock) must
// take the latch itself. Here one thread locks and releases rows of one partition exclusively,
// on the slots where the other looks for a row: under ThreadSanitizer, a look that took only
// the partition's latch is a data race (as engine_threads_test's scans beside aborts met it).
TEST(ThreadsLockTable, AWaitForABriefLockOutsideTheLatchKeepsClearOfTheExclusiveHolder) {
  OperationLatch latch;
  LockManager locks(latch);
  // The same partition (bits 26 up) and home slot (low bits): the holder's rows fill the
  // slots that a look for `waited` probes.
  const LockName waited = (LockName{8} << 32) | 5;
  std::atomic<bool> looking{false}, done{false};
  std::thread holder([&] {
    // Not before the other thread looks: on a busy machine it might otherwise start after the
    // holder is done.
    while (!looking.load()) std::this_thread::yield();
    TransactionState txn;
    for (TxnId id = 1; id <= 3000; ++id) {
      txn.reset(id);
      const OperationLatch::Exclusive latched(latch);
      for (LockName n = 1; n <= 6; ++n) locks.lock(txn, 7, waited + 64 * n, LockMode::kExclusive);
      locks.release_all(txn);
    }
    done.store(true);
  });
  std::uint64_t looks = 0;
  for (; !done.load(); ++looks) {
    locks.wait_while_brief(waited);
    looking.store(true);
  }
  holder.join();
  EXPECT_GT(looks, 0u);
  EXPECT_EQ(locks.locked_rows(), 0u);
}

}  // namespace
}  // namespace tristore
