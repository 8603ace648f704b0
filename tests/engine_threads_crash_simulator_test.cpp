// Power failures amid threads changing side by side, on the architectures that keep everything
// in NVM (nvm-direct changes its pages in place; basic-nvm writes them back from DRAM). Four
// threads run bank transfers (two account updates, their own commit counter and a journal
// row appended under their own keys per transaction, so the journal's leaves split beside the
// changes) beside each other; the NVM crash simulator cuts the run at a
// random fence, in whichever thread reaches it, and crash images keep what was fenced and, at
// random, each other 8-byte word written since (so an interrupted in-place change can survive
// in part). The database reopened from each image must keep the sum of the balances, every
// commit a thread saw return before the crash, and for each thread exactly the journal rows of
// its commits. Seeds are printed; TRISTORE_SEED replays the choice of
// crash points (the threads' interleaving is the scheduler's); TRISTORE_SOAK_ITERATIONS=N tries
// N times more crash points.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "emulation/crash_simulator.hpp"
#include "engine/database.hpp"
#include "engine/lock_manager.hpp"
#include "engine/table.hpp"
#include "tests/architecture_test_name.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

constexpr unsigned kThreads = 4;
constexpr std::uint64_t kAccounts = 64;
constexpr std::int64_t kStart = 1000;
constexpr std::uint64_t kTransfersPerThread = 300;
constexpr std::uint64_t kCrashPoints = 12;  // times TRISTORE_SOAK_ITERATIONS
constexpr std::uint64_t kImagesPerCrash = 2;

using Accounts = Table<std::uint64_t, std::int64_t>;
using Counts = Table<std::uint64_t, std::uint64_t>;
// A journal row: 256 bytes, so that ~60 fill a leaf and the journal splits ~20 times.
struct JournalEntry {
  std::uint64_t thread;
  std::uint64_t n;
  std::array<std::uint64_t, 30> filler;
};
using Journal = Table<std::uint64_t, JournalEntry>;
std::uint64_t journal_key(std::uint64_t thread, std::uint64_t n) { return thread << 32 | n; }
JournalEntry journal_entry(std::uint64_t thread, std::uint64_t n) {
  JournalEntry entry{thread, n, {}};
  for (std::size_t i = 0; i < entry.filler.size(); ++i) entry.filler[i] = n * 31 + thread + i;
  return entry;
}

Config crash_config(Architecture arch, const std::string& nvm, bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 4 * kMiB;
  config.nvm_bytes = 16 * kMiB;
  config.nvm_path = nvm;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  config.checkpoint_interval_bytes = 256 * 1024;  // checkpoints among the transfers
  config.nvm_crash_simulation = true;
  return config;
}

struct Outcome {
  bool crashed = false;
  std::uint64_t fences = 0;                            // of the transfers
  std::uint64_t splits_beside = 0;                     // of a run without a crash
  std::array<std::uint64_t, kThreads> acknowledged{};  // commits returned before the crash
};

// Transfers until the thread's quota or the crash. A commit counts once it has returned and the
// machine was still up: its fence came before the crash, so it is durable.
void transfers(Database& db, Accounts& accounts, Counts& counts, Journal& journal,
               CrashSimulator& nvm, unsigned thread, std::uint64_t seed,
               std::uint64_t& acknowledged, std::atomic<bool>& failed) {
  std::mt19937_64 random(seed * kThreads + thread);
  std::uint64_t committed = 0;
  while (committed < kTransfersPerThread && !nvm.crashed()) {
    const std::uint64_t from = random() % kAccounts, to = (from + 1 + random() % 7) % kAccounts;
    const std::int64_t amount = static_cast<std::int64_t>(random() % 50);
    try {
      Transaction txn = db.begin();
      std::int64_t a = 0, b = 0;
      if (!accounts.get(txn, from, a) || !accounts.get(txn, to, b)) {
        failed = true;
        return;
      }
      accounts.update(txn, from, a - amount);
      accounts.update(txn, to, b + amount);
      counts.update(txn, thread, committed + 1);
      if (!journal.insert(txn, journal_key(thread, committed + 1),
                          journal_entry(thread, committed + 1))) {
        failed = true;
        return;
      }
      txn.commit();
      ++committed;
      if (!nvm.crashed()) acknowledged = committed;
    } catch (const LockConflict&) {
      // Retried with new accounts.
    } catch (const SimulatedCrash&) {
      return;
    } catch (const Error& e) {
      if (nvm.crashed()) return;  // the machine is down: what follows is no longer the test's
      std::fprintf(stderr, "thread %u: %s\n", thread, e.what());
      failed = true;
      return;
    }
  }
}

// Loads, arms a crash at the n-th fence of the transfers (0: none), runs; after a crash writes
// the images.
Outcome run(Architecture arch, const testing_support::TempDir& dir, std::uint64_t seed,
            std::uint64_t crash_at) {
  Outcome outcome;
  auto db = Database::open(crash_config(arch, dir.file("db.nvm"), true));
  Accounts accounts = db->create_table<std::uint64_t, std::int64_t>("accounts");
  Counts counts = db->create_table<std::uint64_t, std::uint64_t>("counts");
  Journal journal = db->create_table<std::uint64_t, JournalEntry>("journal");
  for (std::uint64_t k = 0; k < kAccounts; ++k) EXPECT_TRUE(accounts.insert(k, kStart));
  for (std::uint64_t t = 0; t < kThreads; ++t) EXPECT_TRUE(counts.insert(t, 0));
  db->checkpoint();
  CrashSimulator& nvm = *db->nvm_crash_simulator();
  const std::uint64_t fences_before = nvm.fences();
  if (crash_at != 0) nvm.arm_crash_at_fence(crash_at);
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      transfers(*db, accounts, counts, journal, nvm, t, seed + crash_at, outcome.acknowledged[t],
                failed);
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(failed) << "a transfer failed before any crash";
  outcome.fences = nvm.fences() - fences_before;
  outcome.crashed = nvm.crashed();
  if (!outcome.crashed) {
    nvm.disarm();
    outcome.splits_beside = db->counters().splits_beside;
    return outcome;
  }
  for (std::uint64_t k = 0; k < kImagesPerCrash; ++k)
    nvm.write_crash_image(seed + crash_at * 16 + k, dir.file("image" + std::to_string(k)));
  db->simulate_crash_on_close();
  return outcome;
}

class ThreadsCrashSimulator : public ::testing::TestWithParam<Architecture> {};

TEST_P(ThreadsCrashSimulator, AtAnyFenceAmidThreadsTheSumHoldsAndAcknowledgedCommitsStay) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  std::mt19937_64 random(seed);
  const testing_support::TempDir dir(testing_support::kNvmBase, "tristore-threads-crash-sim");
  const std::uint64_t points = kCrashPoints * testing_support::soak_iterations();
  // A run without a crash tells how many fences the transfers take (the interleaving moves
  // that a little from run to run; a point past the end crashes nothing).
  // The journal's leaves must also split beside the changes in it, for the crash points to
  // fall amid such splits. Threads that happen to run one after another (a
  // thread alone runs exclusively) split none beside, so a run without one is run again.
  Outcome whole = run(arch, dir, seed, 0);
  for (int again = 0; whole.splits_beside == 0 && again < 8; ++again)
    whole = run(arch, dir, seed + again + 1, 0);
  const std::uint64_t fences = whole.fences;
  ASSERT_GT(fences, 0u);
  EXPECT_GT(whole.splits_beside, 0u) << "the journal's leaves split beside the changes";
  std::uint64_t crashes = 0;
  for (std::uint64_t point = 0; point < points; ++point) {
    const std::uint64_t crash_at = 1 + random() % fences;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", crash at fence " + std::to_string(crash_at));
    const Outcome outcome = run(arch, dir, seed, crash_at);
    if (::testing::Test::HasFailure()) return;
    if (!outcome.crashed) continue;
    ++crashes;
    for (std::uint64_t k = 0; k < kImagesPerCrash; ++k) {
      SCOPED_TRACE("image " + std::to_string(k));
      auto db = Database::open(crash_config(arch, dir.file("image" + std::to_string(k)), false));
      Accounts accounts = db->open_table<std::uint64_t, std::int64_t>("accounts");
      Counts counts = db->open_table<std::uint64_t, std::uint64_t>("counts");
      std::int64_t sum = 0;
      std::uint64_t rows = 0;
      accounts.scan(0, kAccounts, [&](const std::uint64_t&, const std::int64_t& balance) {
        sum += balance;
        ++rows;
        return true;
      });
      EXPECT_EQ(rows, kAccounts);
      EXPECT_EQ(sum, kStart * static_cast<std::int64_t>(kAccounts)) << "a transfer was half done";
      Journal journal = db->open_table<std::uint64_t, JournalEntry>("journal");
      std::array<std::uint64_t, kThreads> journaled{};  // each thread's rows, in order
      bool journal_right = true;
      journal.scan(0, ~std::size_t{0}, [&](const std::uint64_t& key, const JournalEntry& entry) {
        const std::uint64_t t = key >> 32;
        journal_right = journal_right && t < kThreads && entry.thread == t &&
                        entry.n == (key & 0xffffffffu) && entry.n == journaled[t] + 1 &&
                        entry.filler == journal_entry(t, entry.n).filler;
        if (journal_right) journaled[t] = entry.n;
        return journal_right;
      });
      EXPECT_TRUE(journal_right) << "a journal row missing, out of order or torn";
      for (std::uint64_t t = 0; t < kThreads; ++t) {
        std::uint64_t committed = 0;
        ASSERT_TRUE(counts.get(t, committed));
        EXPECT_GE(committed, outcome.acknowledged[t]) << "thread " << t << " lost commits";
        EXPECT_EQ(journaled[t], committed) << "thread " << t << "'s journal and its count differ";
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
  std::printf("%s: %llu crashes of %llu crash points (seed %llu)\n",
              std::string(architecture_name(arch)).c_str(),
              static_cast<unsigned long long>(crashes), static_cast<unsigned long long>(points),
              static_cast<unsigned long long>(seed));
  EXPECT_GT(crashes, 0u);
}

INSTANTIATE_TEST_SUITE_P(AllInNvm, ThreadsCrashSimulator,
                         ::testing::Values(Architecture::kNvmDirect, Architecture::kBasicNvm),
                         testing_support::ArchitectureTestName{});

}  // namespace
}  // namespace tristore
