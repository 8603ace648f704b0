// Kill -9 during a multi-threaded run, round after round on the same files: a child process
// opens the database (restart included) and runs four threads of transactions, more threads
// than cores. Transaction i of thread t inserts row (t, i), sets thread t's counter to i and,
// one time in three, moves money between two shared accounts (conflicts, aborts and retries
// among the threads); then, outside any transaction (side by side, engine/btree_table.hpp), it
// stamps i on its own row and (t, i) on a row all threads stamp. One time in four a rehearsal
// comes first and aborts: the same row with other bytes, a counter far ahead and one account
// short (aborts run beside the other threads' changes, step by step), so an abort undone only
// in part, or a crash that keeps part of one, shows in the rows, the counters or the sum.
// After each commit and its
// stamps the child reports (t, i) through a pipe. The parent kills it at a random moment,
// reopens, and checks: every acknowledged commit and stamp is there, no stamp runs ahead of
// its commit; each thread's rows are exactly 1..counter (no transaction half there, none
// invented); the accounts keep their sum. All four durable architectures. Seeds printed;
// TRISTORE_SEED replays the kill times (not the interleaving); TRISTORE_SOAK_ITERATIONS=N runs N
// times the rounds.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "architecture_test_name.hpp"
#include "engine/database.hpp"
#include "engine/lock_manager.hpp"
#include "engine/table.hpp"
#include "test_support.hpp"

namespace tristore {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;
constexpr unsigned kThreads = 4;
constexpr std::uint64_t kAccounts = 8;
constexpr std::int64_t kStart = 1000;
constexpr std::uint64_t kRoundsPerArchitecture = 8;  // times TRISTORE_SOAK_ITERATIONS

struct Row {
  std::uint64_t thread;
  std::uint64_t index;
  std::uint64_t filler[10];
};
using Rows = Table<std::uint64_t, Row>;
using Counts = Table<std::uint64_t, std::uint64_t>;   // thread -> its last committed index
using Accounts = Table<std::uint64_t, std::int64_t>;  // shared: the sum never changes
using Stamps = Table<std::uint64_t, std::uint64_t>;   // thread -> i; kThreads -> t << 32 | i

std::uint64_t row_key(std::uint64_t thread, std::uint64_t index) { return thread << 32 | index; }
Row make_row(std::uint64_t thread, std::uint64_t index) {
  Row row{thread, index, {}};
  std::fill(std::begin(row.filler), std::end(row.filler), thread * 1'000'003 + index);
  return row;
}

std::uint64_t soak() { return testing_support::soak_iterations(); }

using Files = testing_support::TmpfsDatabaseFiles;
constexpr const char* kFilesPrefix = "tristore-threads-crash";

// Every commit leaves a row, so the files grow with the rounds: soaked longer, each gets room
// in proportion. basic-nvm and nvm-direct keep every page in NVM (basic-nvm filled 6 MiB in 6
// rounds: its rows' leaves split half full).
std::uint64_t room_factor() { return 1 + soak() / 3; }
std::uint64_t base_nvm_bytes(Architecture arch) {
  if (arch == Architecture::kNvmDirect) return 24 * kMiB;
  return arch == Architecture::kBasicNvm ? 16 * kMiB : 6 * kMiB;
}

Config crash_config(Architecture arch, const Files& files, bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 1 * kMiB;  // pages move between the tiers under the threads
  config.nvm_bytes = base_nvm_bytes(arch) * room_factor();
  config.ssd_bytes = 64 * kMiB * room_factor();
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  config.checkpoint_interval_bytes = 256 << 10;  // checkpoints among the threads
  return config;
}

struct Ack {
  std::uint64_t thread;
  std::uint64_t index;  // 0: the child has opened everything
};

[[noreturn]] void run_child(Architecture arch, const Files& files, bool create, std::uint64_t seed,
                            int out) {
  try {
    auto db = Database::open(crash_config(arch, files, create));
    Rows rows = create ? db->create_table<std::uint64_t, Row>("rows")
                       : db->open_table<std::uint64_t, Row>("rows");
    Counts counts = create ? db->create_table<std::uint64_t, std::uint64_t>("counts")
                           : db->open_table<std::uint64_t, std::uint64_t>("counts");
    Accounts accounts = create ? db->create_table<std::uint64_t, std::int64_t>("accounts")
                               : db->open_table<std::uint64_t, std::int64_t>("accounts");
    Stamps stamps = create ? db->create_table<std::uint64_t, std::uint64_t>("stamps")
                           : db->open_table<std::uint64_t, std::uint64_t>("stamps");
    if (create) {
      Transaction setup = db->begin();
      for (std::uint64_t t = 0; t <= kThreads; ++t) stamps.insert(setup, t, 0);
      for (std::uint64_t t = 0; t < kThreads; ++t) counts.insert(setup, t, 0);
      for (std::uint64_t a = 0; a < kAccounts; ++a) accounts.insert(setup, a, kStart);
      setup.commit();
    }
    const Ack opened{0, 0};
    if (write(out, &opened, sizeof(opened)) != sizeof(opened)) _exit(3);
    const auto worker = [&](std::uint64_t t) {
      std::mt19937_64 random(seed ^ (t << 48));
      std::uint64_t last = 0;
      if (!counts.get(t, last)) _exit(4);
      for (std::uint64_t i = last + 1;; ++i) {
        const bool transfer = random() % 3 == 0;
        const std::uint64_t from = random() % kAccounts, to = (from + 1) % kAccounts;
        if (random() % 4 == 0) {
          try {
            Transaction rehearsal = db->begin();
            Row wrong = make_row(t, i);
            wrong.filler[9] = ~wrong.filler[9];
            if (!rows.insert(rehearsal, row_key(t, i), wrong)) _exit(6);
            counts.update(rehearsal, t, i + 1'000'000);
            std::int64_t a = 0;
            accounts.get(rehearsal, from, a);
            accounts.update(rehearsal, from, a - 1000);
            rehearsal.abort();
          } catch (const LockConflict&) {  // aborted as it is dropped
          }
        }
        for (;;) {  // retried after a conflict, with the same effects
          try {
            Transaction txn = db->begin();
            if (!rows.insert(txn, row_key(t, i), make_row(t, i))) _exit(6);
            counts.update(txn, t, i);
            if (transfer) {
              std::int64_t a = 0, b = 0;
              accounts.get(txn, from, a);
              accounts.get(txn, to, b);
              accounts.update(txn, from, a - 7);
              accounts.update(txn, to, b + 7);
            }
            txn.commit();
            break;
          } catch (const LockConflict&) {
            std::this_thread::yield();
          }
        }
        // Outside any transaction: each durable once it returns (no transaction locks them).
        if (!stamps.update(t, i) || !stamps.update(kThreads, t << 32 | i)) _exit(5);
        const Ack ack{t, i};
        if (write(out, &ack, sizeof(ack)) != sizeof(ack)) _exit(3);
      }
    };
    std::vector<std::thread> threads;
    for (std::uint64_t t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
    for (std::thread& thread : threads) thread.join();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    _exit(2);
  }
  _exit(0);
}

class ThreadsCrash : public ::testing::TestWithParam<Architecture> {};

TEST_P(ThreadsCrash, KillNineAmidFourThreadsKeepsEveryAcknowledgedCommitAndNothingHalfDone) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  std::mt19937_64 random(seed);
  const Files files{kFilesPrefix};
  std::array<std::uint64_t, kThreads> acknowledged{};
  // Stamps acknowledged: unlike commits, one cut before its acknowledgement may be missing.
  std::array<std::uint64_t, kThreads> stamped{};
  bool created = false;
  std::uint64_t commits_checked = 0;
  const std::uint64_t rounds = kRoundsPerArchitecture * soak();
  for (std::uint64_t round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + ", seed " + std::to_string(seed));
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(pipe_fds[0]);
      run_child(arch, files, !created, seed + round, pipe_fds[1]);
    }
    close(pipe_fds[1]);
    // 1. Wait until it has opened, let the threads run a random while, kill it.
    bool opened = false;
    Ack ack;
    const auto receive = [&] {
      if (ack.index == 0) {
        opened = true;
        return;
      }
      acknowledged[ack.thread] = std::max(acknowledged[ack.thread], ack.index);
      stamped[ack.thread] = std::max(stamped[ack.thread], ack.index);
    };
    while (!opened && read(pipe_fds[0], &ack, sizeof(ack)) == sizeof(ack)) receive();
    ASSERT_TRUE(opened) << "the child ended before it opened the database";
    std::this_thread::sleep_for(std::chrono::microseconds(5000 + random() % 120000));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(testing_support::killed_by_sigkill(status))
        << "the child ended on its own: " << testing_support::how_child_ended(status);
    while (read(pipe_fds[0], &ack, sizeof(ack)) == sizeof(ack)) receive();
    close(pipe_fds[0]);
    created = true;

    // 2. Reopen and check.
    auto db = Database::open(crash_config(arch, files, false));
    Rows rows = db->open_table<std::uint64_t, Row>("rows");
    Counts counts = db->open_table<std::uint64_t, std::uint64_t>("counts");
    Accounts accounts = db->open_table<std::uint64_t, std::int64_t>("accounts");
    Stamps stamps = db->open_table<std::uint64_t, std::uint64_t>("stamps");
    std::array<std::uint64_t, kThreads> committed{};
    for (std::uint64_t t = 0; t < kThreads; ++t) {
      ASSERT_TRUE(counts.get(t, committed[t]));
      ASSERT_GE(committed[t], acknowledged[t]) << "thread " << t << " lost acknowledged commits";
      std::uint64_t stamp = 0;
      ASSERT_TRUE(stamps.get(t, stamp));
      ASSERT_GE(stamp, stamped[t]) << "thread " << t << " lost an acknowledged stamp";
      ASSERT_LE(stamp, committed[t]) << "thread " << t << "'s stamp ran ahead of its commit";
      acknowledged[t] = committed[t];  // a commit cut before its acknowledgement is kept too
    }
    std::array<std::uint64_t, kThreads> next{};
    for (std::uint64_t& n : next) n = 1;
    bool rows_ok = true;
    rows.scan(0, SIZE_MAX, [&](const std::uint64_t& key, const Row& row) {
      const std::uint64_t t = key >> 32, i = key & 0xffffffff;
      if (t >= kThreads || i != next[t] || row.thread != t || row.index != i ||
          row.filler[9] != t * 1'000'003 + i) {
        ADD_FAILURE() << "unexpected row: thread " << t << " index " << i << ", expected index "
                      << (t < kThreads ? next[t] : 0);
        rows_ok = false;
        return false;
      }
      ++next[t];
      return true;
    });
    ASSERT_TRUE(rows_ok);
    commits_checked = 0;
    for (std::uint64_t t = 0; t < kThreads; ++t) {
      EXPECT_EQ(next[t] - 1, committed[t]) << "thread " << t << ": rows and counter disagree";
      commits_checked += committed[t];
    }
    std::int64_t sum = 0;
    accounts.scan(0, SIZE_MAX, [&](const std::uint64_t&, const std::int64_t& balance) {
      sum += balance;
      return true;
    });
    ASSERT_EQ(sum, kStart * static_cast<std::int64_t>(kAccounts)) << "a transfer was half done";
    std::uint64_t shared_stamp = 0;
    ASSERT_TRUE(stamps.get(kThreads, shared_stamp));
    if (shared_stamp != 0) {
      const std::uint64_t t = shared_stamp >> 32, i = shared_stamp & 0xffffffff;
      ASSERT_LT(t, kThreads) << "the shared stamp is not one a thread wrote";
      ASSERT_LE(i, committed[t]) << "the shared stamp ran ahead of thread " << t << "'s commit";
    }
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("%s: %llu rounds, %llu commits present at the last check\n",
              std::string(architecture_name(arch)).c_str(), static_cast<unsigned long long>(rounds),
              static_cast<unsigned long long>(commits_checked));
  EXPECT_GT(commits_checked, 0u);
}

INSTANTIATE_TEST_SUITE_P(Durable, ThreadsCrash,
                         ::testing::Values(Architecture::kThreeTier, Architecture::kBasicNvm,
                                           Architecture::kNvmDirect, Architecture::kSsdBm),
                         testing_support::ArchitectureTestName{});

}  // namespace
}  // namespace tristore
