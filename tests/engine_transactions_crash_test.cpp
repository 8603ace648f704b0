// Transactions survive real crashes: a forked child runs random multi-operation transactions
// (some aborted) and reports each finished one through a pipe; the parent kills it with
// SIGKILL at a random moment, reopens the files, and compares a full scan with a model of the
// acknowledged commits. The transaction in flight may be present or absent, but whole.
// Seeds are printed; TRISTORE_SEED replays; TRISTORE_SOAK_ITERATIONS runs more rounds.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "engine/database.hpp"
#include "engine/restart_report.hpp"
#include "engine/table.hpp"
#include "engine/transaction.hpp"
#include "tests/engine_crash_test_support.hpp"

namespace tristore {
namespace {

using namespace crash_test;

// The child: load, then transactions until killed; writes each finished index to `out`.
[[noreturn]] void run_child(Architecture arch, const Files& files, std::uint64_t seed, int out) {
  try {
    auto db = Database::open(config_for(arch, files, true));
    auto table = db->create_table<std::uint64_t, Row>("rows");
    table.bulk_load(kLoadedKeys, [](std::size_t i, std::uint64_t& k, Row& row) {
      k = i * (kKeySpace / kLoadedKeys);
      row = make_row(k, 0);
    });
    for (std::uint64_t i = 1;; ++i) {
      run_txn(*db, table, seed, i);
      if (write(out, &i, sizeof(i)) != sizeof(i)) _exit(3);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    _exit(2);
  }
}

void kill_and_recover(Architecture arch) {
  const std::uint64_t seed0 = base_seed();
  for (int round = 0; round < rounds(); ++round) {
    const std::uint64_t seed = seed0 + round;
    SCOPED_TRACE("round seed " + std::to_string(seed));
    Files files;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::mt19937_64 random(seed);
    const std::uint64_t target = 20 + random() % 200;  // finished transactions before the kill
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      run_child(arch, files, seed, fds[1]);
    }
    close(fds[1]);
    // 1. Read reports until the target, then kill at once (mid-transaction, usually).
    std::uint64_t last = 0;
    std::uint64_t index;
    while (last < target && read(fds[0], &index, sizeof(index)) == sizeof(index)) last = index;
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    while (read(fds[0], &index, sizeof(index)) == sizeof(index)) last = index;
    close(fds[0]);
    ASSERT_TRUE(testing_support::killed_by_sigkill(status))
        << "the child ended on its own: " << testing_support::how_child_ended(status);
    // 2. Reopen: every acknowledged commit, no abort, the one in flight whole or not at all.
    auto db = Database::open(config_for(arch, files, false));
    auto table = db->open_table<std::uint64_t, Row>("rows");
    const Model seen = scan_all(table);
    const Model without = model_after(seed, last);
    const Model with = model_after(seed, last + 1);
    EXPECT_TRUE(same(seen, without) || same(seen, with))
        << "after " << last << " finished transactions: " << seen.size() << " rows, expected "
        << without.size() << " or " << with.size();
    EXPECT_TRUE(db->restart_report().performed);
    // 3. The recovered database keeps working and reopens cleanly.
    Transaction t = db->begin();
    table.insert(t, kKeySpace + 1, make_row(kKeySpace + 1, 7));
    t.commit();
  }
}

// Without a crash: aborts leave no trace and commits stay, on every architecture.
void transactions_match_model(Architecture arch) {
  const std::uint64_t seed = base_seed();
  Files files;
  Config config = config_for(arch, files, true);
  if (arch == Architecture::kMainMemory) config.dram_bytes = 64 * kMiB;
  auto db = Database::open(config);
  auto table = db->create_table<std::uint64_t, Row>("rows");
  table.bulk_load(kLoadedKeys, [](std::size_t i, std::uint64_t& k, Row& row) {
    k = i * (kKeySpace / kLoadedKeys);
    row = make_row(k, 0);
  });
  Model model = loaded_model();
  for (std::uint64_t i = 1; i <= 150; ++i) {
    run_txn(*db, table, seed, i);
    const Txn txn = make_txn(seed, i);
    if (txn.commit)
      for (const Op& op : txn.ops) apply(model, op, i);
    if (i % 25 == 0) {
      ASSERT_TRUE(same(scan_all(table), model)) << "after transaction " << i;
    }
  }
}

// A crash at a known point: the child ends with _exit after `transactions` transactions and
// one unfinished one (no destructor runs, nothing is closed).
void recovers_after_exit(Architecture arch, std::uint64_t transactions) {
  const std::uint64_t seed = base_seed();
  Files files;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto db = Database::open(config_for(arch, files, true));
    auto table = db->create_table<std::uint64_t, Row>("rows");
    table.bulk_load(kLoadedKeys, [](std::size_t i, std::uint64_t& k, Row& row) {
      k = i * (kKeySpace / kLoadedKeys);
      row = make_row(k, 0);
    });
    for (std::uint64_t i = 1; i <= transactions; ++i) {
      run_txn(*db, table, seed, i);
    }
    // An unfinished transaction, then the crash.
    Transaction t = db->begin();
    table.insert(t, kKeySpace + 5, make_row(kKeySpace + 5, 1));
    table.remove(t, 0);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto db = Database::open(config_for(arch, files, false));
  EXPECT_TRUE(db->restart_report().performed);
  auto table = db->open_table<std::uint64_t, Row>("rows");
  EXPECT_TRUE(same(scan_all(table), model_after(seed, transactions)))
      << "after " << transactions << " transactions";
}

TEST(EngineTransactionsCrash, RecoversAfterExitAtKnownPoints) {
  for (Architecture arch : {Architecture::kThreeTier, Architecture::kBasicNvm, Architecture::kSsdBm,
                            Architecture::kNvmDirect}) {
    SCOPED_TRACE(std::string(architecture_name(arch)));
    for (std::uint64_t n : {1, 10, 100, 300}) recovers_after_exit(arch, n);
  }
}

TEST(EngineTransactions, AbortAndCommitMatchModelOnEveryArchitecture) {
  for (Architecture arch :
       {Architecture::kMainMemory, Architecture::kThreeTier, Architecture::kBasicNvm,
        Architecture::kSsdBm, Architecture::kNvmDirect}) {
    SCOPED_TRACE(std::string(architecture_name(arch)));
    transactions_match_model(arch);
  }
}

TEST(EngineTransactionsCrash, ThreeTierSurvivesKill) { kill_and_recover(Architecture::kThreeTier); }
TEST(EngineTransactionsCrash, BasicNvmSurvivesKill) { kill_and_recover(Architecture::kBasicNvm); }
TEST(EngineTransactionsCrash, SsdBmSurvivesKill) { kill_and_recover(Architecture::kSsdBm); }
TEST(EngineTransactionsCrash, NvmDirectSurvivesKill) { kill_and_recover(Architecture::kNvmDirect); }

}  // namespace
}  // namespace tristore
