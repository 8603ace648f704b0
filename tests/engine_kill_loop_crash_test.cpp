// Kill -9 loop: round after round on the same files, a child process opens the database
// (restart included), opens both of its tables and runs random transactions, short ones and
// long ones whose live undo takes a good part of a small log (512 KiB), so checkpoints run
// inside them; the parent kills it at a random moment (also during restart), reopens, and
// checks that every acknowledged commit is there, no aborted or unfinished change is, and
// both tables open. Half the verifications end in a simulated crash too, so the next child's
// restart finds undo left to do. All four durable architectures. Seeds printed;
// TRISTORE_SEED replays; TRISTORE_SOAK_ITERATIONS=N runs N times the rounds (N = 11: 1100
// crashes).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/database.hpp"
#include "engine/table.hpp"
#include "engine/transaction.hpp"
#include "tests/engine_crash_test_support.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using crash_test::make_row;
using crash_test::Model;
using crash_test::Row;
using RowTable = Table<std::uint64_t, Row>;
using AuditTable = Table<std::uint64_t, std::uint64_t>;  // transaction -> its operation count
using Audit = std::map<std::uint64_t, std::uint64_t>;

constexpr std::uint64_t kKeySpace = 6000;
constexpr std::uint64_t kRoundsPerArchitecture = 25;  // times TRISTORE_SOAK_ITERATIONS

std::uint64_t soak() { return testing_support::soak_iterations(); }

// Both files on tmpfs: the SSD file's durability is what the kill tests (a process crash
// keeps what reached the page cache), and O_DIRECT on this VM's disk would make rounds slow.
using Files = testing_support::TmpfsDatabaseFiles;
constexpr const char* kFilesPrefix = "tristore-kill-loop";

// The audit table gains a row per commit, so past ten soak iterations basic-nvm and nvm-direct,
// which keep every page in NVM, get more of it (their log grows with it; checkpoints still
// run every 128 KiB of log).
std::uint64_t loop_nvm_bytes(Architecture arch) {
  const bool all_in_nvm = arch == Architecture::kBasicNvm || arch == Architecture::kNvmDirect;
  return 4 * kMiB * (all_in_nvm ? 1 + soak() / 10 : 1);
}

Config loop_config(Architecture arch, const Files& files, bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 1 * kMiB;             // a few dozen frames: pages move between the tiers
  config.nvm_bytes = loop_nvm_bytes(arch);  // an eighth of it, 512 KiB at first, is the log
  config.checkpoint_interval_bytes = 128 * 1024;  // a quarter of 512 KiB
  config.ssd_bytes = 64 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  return config;
}

struct LoopTxn {
  std::vector<crash_test::Op> ops;
  bool commit;
};

// Transaction i: one in five is long (mostly updates: 200-byte before-images stay live until
// it ends), the others 1-6 operations; four in five commit. nvm-direct's operations may log
// whole-page before-images, so its log takes less live undo.
LoopTxn make_loop_txn(Architecture arch, std::uint64_t seed, std::uint64_t i) {
  std::mt19937_64 random(seed * 1000003 + i);
  LoopTxn txn;
  const bool long_one = random() % 5 == 0;
  const std::uint64_t max_long = arch == Architecture::kNvmDirect ? 100 : 350;
  const std::uint64_t count =
      long_one ? max_long / 2 + random() % (max_long / 2) : 1 + random() % 6;
  for (std::uint64_t n = 0; n < count; ++n) {
    const std::uint64_t kind = long_one ? (random() % 10 < 7 ? 1 : random() % 3) : random() % 3;
    txn.ops.push_back({static_cast<crash_test::Op::Kind>(kind), random() % kKeySpace});
  }
  txn.commit = random() % 5 != 0;
  return txn;
}

void apply(Model& model, Audit& audit, const LoopTxn& txn, std::uint64_t i) {
  for (const crash_test::Op& op : txn.ops) crash_test::apply(model, op, i);
  audit[i] = txn.ops.size();
}

enum Report : std::uint64_t { kOpened = 1, kBegun, kEnded };
struct Message {
  std::uint64_t kind;
  std::uint64_t txn;
  std::uint64_t checkpoints;  // kEnded: checkpoints completed during the transaction
};

void send(int out, Report kind, std::uint64_t txn = 0, std::uint64_t checkpoints = 0) {
  const Message message{kind, txn, checkpoints};
  if (write(out, &message, sizeof(message)) != sizeof(message)) _exit(3);
}

// Child: opens (creating on the first round), runs transactions from `first` on until killed.
[[noreturn]] void run_child(Architecture arch, const Files& files, std::uint64_t seed,
                            std::uint64_t first, bool create, int out) {
  try {
    auto db = Database::open(loop_config(arch, files, create));
    RowTable rows = create ? db->create_table<std::uint64_t, Row>("rows")
                           : db->open_table<std::uint64_t, Row>("rows");
    AuditTable audit = create ? db->create_table<std::uint64_t, std::uint64_t>("audit")
                              : db->open_table<std::uint64_t, std::uint64_t>("audit");
    if (create)
      rows.bulk_load(kKeySpace / 2, [](std::size_t n, std::uint64_t& key, Row& row) {
        key = 2 * n;
        row = make_row(key, 0);
      });
    send(out, kOpened);
    for (std::uint64_t i = first;; ++i) {
      const LoopTxn txn = make_loop_txn(arch, seed, i);
      send(out, kBegun, i);
      const std::uint64_t checkpoints = db->counters().log_checkpoints;
      Transaction t = db->begin();
      for (const crash_test::Op& op : txn.ops) {
        if (op.kind == crash_test::Op::kInsert) rows.insert(t, op.key, make_row(op.key, i));
        if (op.kind == crash_test::Op::kUpdate) rows.update(t, op.key, make_row(op.key, i));
        if (op.kind == crash_test::Op::kRemove) rows.remove(t, op.key);
      }
      audit.insert(t, i, txn.ops.size());
      if (txn.commit)
        t.commit();
      else
        t.abort();
      send(out, kEnded, i, db->counters().log_checkpoints - checkpoints);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    _exit(2);
  }
}

Audit scan_audit(AuditTable& table) {
  Audit seen;
  table.scan(0, SIZE_MAX, [&](const std::uint64_t& key, const std::uint64_t& value) {
    seen[key] = value;
    return true;
  });
  return seen;
}

void kill_loop(Architecture arch) {
  const std::uint64_t seed = testing_support::test_seed();
  std::mt19937_64 random(seed);
  const Files files{kFilesPrefix};
  Model model;
  for (std::uint64_t key = 0; key < kKeySpace; key += 2) model[key] = make_row(key, 0);
  Audit audit;
  std::uint64_t next = 1;
  bool created = false;
  std::uint64_t crashes = 0, long_commits = 0, checkpointed_commits = 0;
  const std::uint64_t rounds = kRoundsPerArchitecture * soak();
  for (std::uint64_t round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + ", next transaction " + std::to_string(next));
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(pipe_fds[0]);
      run_child(arch, files, seed, next, !created, pipe_fds[1]);
    }
    close(pipe_fds[1]);
    bool opened = false;
    std::uint64_t begun = 0;  // begun, not ended
    const auto receive = [&](const Message& message) {
      if (message.kind == kOpened) opened = true;
      if (message.kind == kBegun) begun = message.txn;
      if (message.kind != kEnded) return;
      const LoopTxn txn = make_loop_txn(arch, seed, message.txn);
      if (txn.commit) apply(model, audit, txn, message.txn);
      long_commits += txn.commit && txn.ops.size() > 50 ? 1 : 0;
      checkpointed_commits += txn.commit && message.checkpoints != 0 ? 1 : 0;
      begun = 0;
      next = message.txn + 1;
    };
    // 1. Kill it: one round in eight at any moment from its start (restart included), the
    //    others amid its transactions, after it opened.
    Message message;
    const bool amid_transactions = !created || random() % 8 != 0;
    while (amid_transactions && !opened &&
           read(pipe_fds[0], &message, sizeof(message)) == sizeof(message))
      receive(message);
    const bool slow = arch == Architecture::kThreeTier || arch == Architecture::kSsdBm;
    std::this_thread::sleep_for(std::chrono::microseconds(
        amid_transactions ? random() % (slow ? 200000 : 40000) : random() % 20000));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(testing_support::killed_by_sigkill(status))
        << "the child ended on its own: " << testing_support::how_child_ended(status);
    ++crashes;
    // 2. What it acknowledged: transactions ended, and perhaps one begun but not ended.
    while (read(pipe_fds[0], &message, sizeof(message)) == sizeof(message)) receive(message);
    close(pipe_fds[0]);
    if (!created && !opened) continue;  // killed before the database existed whole
    created = true;
    // 3. Reopen: both tables, every acknowledged commit, nothing else but perhaps the
    //    transaction cut while committing.
    auto db = Database::open(loop_config(arch, files, false));
    RowTable rows = db->open_table<std::uint64_t, Row>("rows");
    AuditTable audit_table = db->open_table<std::uint64_t, std::uint64_t>("audit");
    const Model seen = crash_test::scan_all(rows);
    const Audit seen_audit = scan_audit(audit_table);
    if (begun != 0) {
      const LoopTxn txn = make_loop_txn(arch, seed, begun);
      Model with = model;
      Audit audit_with = audit;
      apply(with, audit_with, txn, begun);
      if (txn.commit && crash_test::same(seen, with) && seen_audit == audit_with) {
        model = std::move(with);
        audit = std::move(audit_with);
      }
      next = begun + 1;
    }
    ASSERT_TRUE(crash_test::same(seen, model)) << crash_test::describe_difference(model, seen);
    ASSERT_EQ(seen_audit, audit) << "the audit table differs";
    if (random() % 2 == 0) db->simulate_crash_on_close();
  }
  std::printf(
      "%s: %llu kills, %llu transactions, %llu long ones committed, %llu commits with a "
      "checkpoint inside\n",
      architecture_name(arch).data(), static_cast<unsigned long long>(crashes),
      static_cast<unsigned long long>(next - 1), static_cast<unsigned long long>(long_commits),
      static_cast<unsigned long long>(checkpointed_commits));
}

TEST(EngineKillLoopCrash, ThreeTierKeepsEveryAcknowledgedCommit) {
  kill_loop(Architecture::kThreeTier);
}
TEST(EngineKillLoopCrash, BasicNvmKeepsEveryAcknowledgedCommit) {
  kill_loop(Architecture::kBasicNvm);
}
TEST(EngineKillLoopCrash, SsdBmKeepsEveryAcknowledgedCommit) { kill_loop(Architecture::kSsdBm); }
TEST(EngineKillLoopCrash, NvmDirectKeepsEveryAcknowledgedCommit) {
  kill_loop(Architecture::kNvmDirect);
}

}  // namespace
}  // namespace tristore
