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

namespace tristore {
namespace {

struct Row {
  std::uint64_t key;  // repeated, so a torn or misplaced value is caught
  std::uint64_t version;
  std::array<std::uint8_t, 184> filler;
};
using Model = std::map<std::uint64_t, Row>;

constexpr std::uint64_t kKeySpace = 16000;
constexpr std::uint64_t kLoadedKeys = 8000;  // every other key

std::uint64_t base_seed() {
  const char* fixed = std::getenv("TRISTORE_SEED");
  const std::uint64_t seed =
      fixed != nullptr ? std::strtoull(fixed, nullptr, 10) : std::random_device{}();
  std::printf("seed %llu (TRISTORE_SEED=%llu replays)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

int rounds() {
  const char* soak = std::getenv("TRISTORE_SOAK_ITERATIONS");
  return soak != nullptr ? std::max(1, std::atoi(soak)) : 3;
}

Row make_row(std::uint64_t key, std::uint64_t version) {
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
Txn make_txn(std::uint64_t seed, std::uint64_t i) {
  std::mt19937_64 random(seed * 1000003 + i);
  Txn txn;
  const int count = 1 + static_cast<int>(random() % 6);
  for (int n = 0; n < count; ++n)
    txn.ops.push_back({static_cast<Op::Kind>(random() % 3), random() % kKeySpace});
  txn.commit = random() % 5 != 0;
  return txn;
}

// What the table does with op (insert only if absent, update and remove only if present).
void apply(Model& model, const Op& op, std::uint64_t version) {
  auto it = model.find(op.key);
  if (op.kind == Op::kInsert && it == model.end()) model[op.key] = make_row(op.key, version);
  if (op.kind == Op::kUpdate && it != model.end()) it->second = make_row(op.key, version);
  if (op.kind == Op::kRemove && it != model.end()) model.erase(it);
}

Model loaded_model() {
  Model model;
  for (std::uint64_t k = 0; k < kKeySpace; k += kKeySpace / kLoadedKeys) model[k] = make_row(k, 0);
  return model;
}

struct Files {
  std::string nvm;
  std::filesystem::path ssd_dir;
  Files() {
    char tmpl[] = "/tmp/tristore-txn-crash-XXXXXX";
    ssd_dir = mkdtemp(tmpl);
    nvm = "/dev/shm/tristore-txn-crash-" + std::to_string(getpid()) + ".nvm";
  }
  ~Files() {
    std::filesystem::remove(nvm);
    std::filesystem::remove_all(ssd_dir);
  }
};

Config config_for(Architecture arch, const Files& files, bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 640 * 1024;  // a few dozen frames: most pages live below DRAM
  config.nvm_bytes = arch == Architecture::kThreeTier ? 2 * kMiB : 12 * kMiB;
  config.ssd_bytes = 64 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = (files.ssd_dir / "db.ssd").string();
  config.create = create;
  return config;
}

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
      const Txn txn = make_txn(seed, i);
      Transaction t = db->begin();
      for (const Op& op : txn.ops) {
        if (op.kind == Op::kInsert) table.insert(t, op.key, make_row(op.key, i));
        if (op.kind == Op::kUpdate) table.update(t, op.key, make_row(op.key, i));
        if (op.kind == Op::kRemove) table.remove(t, op.key);
      }
      if (txn.commit)
        t.commit();
      else
        t.abort();
      if (write(out, &i, sizeof(i)) != sizeof(i)) _exit(3);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    _exit(2);
  }
}

// The model after transactions 1..last (committed ones only).
Model model_after(std::uint64_t seed, std::uint64_t last) {
  Model model = loaded_model();
  for (std::uint64_t i = 1; i <= last; ++i) {
    const Txn txn = make_txn(seed, i);
    if (!txn.commit) continue;
    for (const Op& op : txn.ops) apply(model, op, i);
  }
  return model;
}

Model scan_all(Table<std::uint64_t, Row>& table) {
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

bool same(const Model& a, const Model& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
    if (ia->first != ib->first || std::memcmp(&ia->second, &ib->second, sizeof(Row)) != 0)
      return false;
  return true;
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
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child ended on its own, status " << status;
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
    const Txn txn = make_txn(seed, i);
    Transaction t = db->begin();
    for (const Op& op : txn.ops) {
      if (op.kind == Op::kInsert) table.insert(t, op.key, make_row(op.key, i));
      if (op.kind == Op::kUpdate) table.update(t, op.key, make_row(op.key, i));
      if (op.kind == Op::kRemove) table.remove(t, op.key);
    }
    if (txn.commit) {
      t.commit();
      for (const Op& op : txn.ops) apply(model, op, i);
    } else {
      t.abort();
    }
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
      const Txn txn = make_txn(seed, i);
      Transaction t = db->begin();
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
