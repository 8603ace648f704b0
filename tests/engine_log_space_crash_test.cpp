// Crashes around transactions that log more than the log holds, whose undo records the
// checkpoints copy forward: killed (SIGKILL) in the middle of such a transaction, during its
// abort, right after its commit, and during the restart undo of one; and, on the NVM-only
// architectures, cut at many fences by the crash simulator (unfenced lines survive at random,
// so a checkpoint's copies may survive in part). After reopening, the table holds the
// transaction whole if its commit was acknowledged, else none of it, and the commit before it.
// Seeds are printed; TRISTORE_SEED replays; TRISTORE_SOAK_ITERATIONS runs more rounds.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "architecture_test_name.hpp"
#include "emulation/crash_simulator.hpp"
#include "engine/database.hpp"
#include "engine/log_manager.hpp"
#include "engine/restart_report.hpp"
#include "engine/storage_files.hpp"
#include "engine/table.hpp"
#include "engine/transaction.hpp"
#include "tests/engine_log_space_support.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using namespace log_space_test;

// Enough inserts for the log records to outgrow the log (basic-nvm's is twice the others'),
// few enough for the live undo to stay well under half of it.
std::size_t inserts_for(Architecture arch) { return log_bytes(arch) > 512 * 1024 ? 1600 : 1000; }
constexpr std::size_t kChanges = 30;
constexpr std::uint64_t kMarkerKey = 2 * kLoadedRows + 1;  // committed before the long one

// What the child reports through the pipe.
enum Report : std::uint64_t { kOpDone = 1, kIdle, kCommitted, kAborting, kAborted, kOpened };
struct Message {
  std::uint64_t kind;
  std::uint64_t value;  // kOpDone: log bytes the transaction has written so far
};

enum class Ending { kCommit, kAbort, kNone };

int rounds() { return testing_support::soak_iterations(); }

void send(int out, Report kind, std::uint64_t value = 0) {
  const Message message{kind, value};
  if (write(out, &message, sizeof(message)) != sizeof(message)) _exit(3);
}

Model committed_before() {
  Model model = loaded_model();
  model[kMarkerKey] = make_row(kMarkerKey, 9);
  return model;
}

Model committed_with(const std::vector<Op>& ops) {
  Model model = model_with(ops, 1);
  model[kMarkerKey] = make_row(kMarkerKey, 9);
  return model;
}

// Child: load, commit the marker, then the long transaction, reporting each operation; then
// it commits, aborts or idles until killed.
[[noreturn]] void run_long_child(Architecture arch, const testing_support::DatabaseFiles& files,
                                 const std::vector<Op>& ops, Ending ending, int out) {
  try {
    auto db = Database::open(config_for(arch, files, true));
    auto table = db->create_table<std::uint64_t, Row>("rows");
    load(table);
    table.insert(kMarkerKey, make_row(kMarkerKey, 9));
    Transaction txn = db->begin();
    const std::uint64_t before = db->counters().log_bytes_written;
    for (const Op& op : ops) {
      if (!run(table, txn, op, 1)) _exit(4);
      send(out, kOpDone, db->counters().log_bytes_written - before);
    }
    if (ending == Ending::kCommit) {
      txn.commit();
      send(out, kCommitted);
    } else if (ending == Ending::kAbort) {
      send(out, kAborting);
      txn.abort();
      send(out, kAborted);
    } else {
      send(out, kIdle);
    }
    for (;;) pause();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    _exit(2);
  }
}

// Child: reopen (restart) and open the table, which undoes the loser; idles until killed.
[[noreturn]] void run_restart_child(Architecture arch, const testing_support::DatabaseFiles& files,
                                    int out) {
  try {
    auto db = Database::open(config_for(arch, files, false));
    send(out, kOpened);
    auto table = db->open_table<std::uint64_t, Row>("rows");
    send(out, kIdle);
    for (;;) pause();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    _exit(2);
  }
}

struct Killed {
  std::uint64_t ops = 0;     // operations reported done
  std::uint64_t logged = 0;  // log bytes they wrote
  bool committed = false;    // commit acknowledged
};

// Forks child(out), reads its reports until stop(report) or kIdle, waits delay_us, kills it.
template <typename Child, typename Stop>
Killed fork_and_kill(Child&& child, Stop&& stop, std::uint64_t delay_us) {
  Killed killed;
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    child(fds[1]);
  }
  close(fds[1]);
  Message message;
  auto take = [&] {
    if (message.kind == kOpDone) {
      ++killed.ops;
      killed.logged = message.value;
    }
    if (message.kind == kCommitted) killed.committed = true;
  };
  while (read(fds[0], &message, sizeof(message)) == sizeof(message)) {
    take();
    if (message.kind == kIdle || stop(message, killed)) break;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  while (read(fds[0], &message, sizeof(message)) == sizeof(message)) take();
  close(fds[0]);
  EXPECT_TRUE(testing_support::killed_by_sigkill(status))
      << "the child ended on its own: " << testing_support::how_child_ended(status);
  return killed;
}

// Reopens, checks the table (and the number of losers, unless -1), and goes on.
void expect_table(Architecture arch, const testing_support::DatabaseFiles& files,
                  const Model& expected, int losers) {
  auto db = Database::open(config_for(arch, files, false));
  EXPECT_TRUE(db->restart_report().performed);
  if (losers >= 0) {
    EXPECT_EQ(db->restart_report().losers, static_cast<std::uint64_t>(losers));
  }
  auto table = db->open_table<std::uint64_t, Row>("rows");
  const Model seen = scan_all(table);
  EXPECT_TRUE(same(seen, expected)) << difference(expected, seen);
  Transaction txn = db->begin();
  EXPECT_TRUE(table.update(txn, 0, make_row(0, 5)));
  txn.commit();
}

// Kills the long transaction's child at a random operation after its log records outgrew the log.
Killed kill_mid_transaction(Architecture arch, const testing_support::DatabaseFiles& files,
                            const std::vector<Op>& ops, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  const std::uint64_t target = ops.size() / 3 + random() % (ops.size() * 2 / 3);
  const Killed killed =
      fork_and_kill([&](int out) { run_long_child(arch, files, ops, Ending::kNone, out); },
                    [&](const Message&, const Killed& so_far) {
                      return so_far.ops >= target && so_far.logged > log_bytes(arch);
                    },
                    0);
  EXPECT_GT(killed.logged, log_bytes(arch)) << "killed before the log wrapped";
  return killed;
}

class EngineLogSpaceCrash : public testing::TestWithParam<Architecture> {};

TEST_P(EngineLogSpaceCrash, KilledInTheMiddleOfALongTransactionRecoversWithoutIt) {
  const Architecture arch = GetParam();
  const std::uint64_t seed0 = testing_support::test_seed();
  for (int round = 0; round < rounds(); ++round) {
    const std::uint64_t seed = seed0 + round;
    SCOPED_TRACE("round seed " + std::to_string(seed));
    const std::vector<Op> ops = long_transaction(seed, inserts_for(arch), kChanges);
    testing_support::DatabaseFiles files("tristore-log-space-crash");
    kill_mid_transaction(arch, files, ops, seed);
    expect_table(arch, files, committed_before(), 1);
  }
}

TEST_P(EngineLogSpaceCrash, KilledRightAfterALongTransactionCommittedRecoversWithIt) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  const std::vector<Op> ops = long_transaction(seed, inserts_for(arch), kChanges);
  testing_support::DatabaseFiles files("tristore-log-space-crash");
  const Killed killed =
      fork_and_kill([&](int out) { run_long_child(arch, files, ops, Ending::kCommit, out); },
                    [](const Message& m, const Killed&) { return m.kind == kCommitted; }, 0);
  ASSERT_TRUE(killed.committed);
  EXPECT_GT(killed.logged, log_bytes(arch));
  expect_table(arch, files, committed_with(ops), 0);
}

TEST_P(EngineLogSpaceCrash, KilledDuringTheAbortOfALongTransactionRecoversWithoutIt) {
  const Architecture arch = GetParam();
  const std::uint64_t seed0 = testing_support::test_seed();
  for (int round = 0; round < rounds(); ++round) {
    const std::uint64_t seed = seed0 + round;
    SCOPED_TRACE("round seed " + std::to_string(seed));
    const std::vector<Op> ops = long_transaction(seed, inserts_for(arch), kChanges);
    std::mt19937_64 random(seed);
    testing_support::DatabaseFiles files("tristore-log-space-crash");
    fork_and_kill([&](int out) { run_long_child(arch, files, ops, Ending::kAbort, out); },
                  [](const Message& m, const Killed&) { return m.kind == kAborting; },
                  random() % 60000);
    expect_table(arch, files, committed_before(), -1);
  }
}

TEST_P(EngineLogSpaceCrash, KilledDuringTheRestartUndoOfALongTransactionRecoversWithoutIt) {
  const Architecture arch = GetParam();
  const std::uint64_t seed0 = testing_support::test_seed();
  for (int round = 0; round < rounds(); ++round) {
    const std::uint64_t seed = seed0 + round;
    SCOPED_TRACE("round seed " + std::to_string(seed));
    const std::vector<Op> ops = long_transaction(seed, inserts_for(arch), kChanges);
    std::mt19937_64 random(seed);
    testing_support::DatabaseFiles files("tristore-log-space-crash");
    kill_mid_transaction(arch, files, ops, seed);
    fork_and_kill([&](int out) { run_restart_child(arch, files, out); },
                  [](const Message& m, const Killed&) { return m.kind == kOpened; },
                  random() % 40000);
    expect_table(arch, files, committed_before(), -1);
  }
}

INSTANTIATE_TEST_SUITE_P(Durable, EngineLogSpaceCrash, testing::ValuesIn(kDurable),
                         testing_support::ArchitectureTestName{});

// The crash simulator cuts the run at a fence: a power failure, after which only flushed and
// fenced lines are sure to survive (a checkpoint's copies may survive in part).
struct Simulated {
  bool crashed = false;
  bool committing = false;  // the commit had begun
  std::uint64_t fences = 0;
};

Simulated simulate(Architecture arch, const testing_support::DatabaseFiles& files,
                   const std::string& image, const std::vector<Op>& ops, std::uint64_t seed,
                   std::uint64_t crash_at) {
  Simulated outcome;
  Config config = config_for(arch, files, true);
  config.nvm_crash_simulation = true;
  auto db = Database::open(config);
  auto table = db->create_table<std::uint64_t, Row>("rows");
  load(table);
  table.insert(kMarkerKey, make_row(kMarkerKey, 9));
  CrashSimulator* crash = db->nvm_crash_simulator();
  const std::uint64_t before = crash->fences();
  if (crash_at != 0) crash->arm_crash_at_fence(crash_at);
  try {
    Transaction txn = db->begin();
    for (const Op& op : ops) EXPECT_TRUE(run(table, txn, op, 1));
    outcome.committing = true;
    txn.commit();
  } catch (const SimulatedCrash&) {
    outcome.crashed = true;
  }
  outcome.fences = crash->fences() - before;
  if (outcome.crashed) crash->write_crash_image(seed + crash_at, image);
  return outcome;
}

void crash_at_many_fences(Architecture arch) {
  const std::uint64_t seed = testing_support::test_seed();
  const std::vector<Op> ops = long_transaction(seed, 300, 20);
  testing_support::DatabaseFiles files("tristore-log-space-sim");
  const std::string image = files.nvm_dir.file("image.nvm");
  const Simulated full = simulate(arch, files, image, ops, seed, 0);
  ASSERT_GT(full.fences, 10u);
  const std::uint64_t points = std::getenv("TRISTORE_SOAK_ITERATIONS") != nullptr ? 200 : 16;
  const std::uint64_t step = std::max<std::uint64_t>(1, full.fences / points);
  std::mt19937_64 random(seed);
  std::uint64_t crashes = 0;
  for (std::uint64_t n = 1 + random() % step; n <= full.fences; n += step) {
    SCOPED_TRACE("crash at fence " + std::to_string(n));
    const Simulated outcome = simulate(arch, files, image, ops, seed, n);
    if (!outcome.crashed) continue;
    ++crashes;
    testing_support::DatabaseFiles reopened("tristore-log-space-sim");
    Config config = config_for(arch, reopened, false);
    config.nvm_path = image;
    auto db = Database::open(config);
    auto table = db->open_table<std::uint64_t, Row>("rows");
    const Model seen = scan_all(table);
    EXPECT_TRUE(same(seen, committed_before()) ||
                (outcome.committing && same(seen, committed_with(ops))))
        << (outcome.committing ? "while committing: " : "") << difference(committed_before(), seen);
  }
  std::printf("%llu fences in the run, %llu crashes reopened\n",
              static_cast<unsigned long long>(full.fences),
              static_cast<unsigned long long>(crashes));
  EXPECT_GT(crashes, 8u);
}

// A checkpoint in the middle of a long transaction, cut at each of its fences with several
// crash images each: the copies of the live undo records survive whole, in part or not at all.
// image_seed 0: the image holds only what was fenced.
Simulated simulate_checkpoint(Architecture arch, const testing_support::DatabaseFiles& files,
                              const std::string& image, const std::vector<Op>& ops,
                              std::uint64_t image_seed, std::uint64_t crash_at) {
  Simulated outcome;
  Config config = config_for(arch, files, true);
  config.nvm_crash_simulation = true;
  auto db = Database::open(config);
  auto table = db->create_table<std::uint64_t, Row>("rows");
  load(table);
  table.insert(kMarkerKey, make_row(kMarkerKey, 9));
  CrashSimulator* crash = db->nvm_crash_simulator();
  try {
    Transaction txn = db->begin();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (i == ops.size() / 2) {
        const std::uint64_t before = crash->fences();
        if (crash_at != 0) crash->arm_crash_at_fence(crash_at);
        db->checkpoint();
        crash->disarm();
        outcome.fences = crash->fences() - before;
      }
      EXPECT_TRUE(run(table, txn, ops[i], 1));
    }
    outcome.committing = true;
    txn.commit();
  } catch (const SimulatedCrash&) {
    outcome.crashed = true;
  }
  if (outcome.crashed && image_seed == 0) crash->write_durable_image(image);
  if (outcome.crashed && image_seed != 0) crash->write_crash_image(image_seed, image);
  return outcome;
}

void crash_in_checkpoint(Architecture arch) {
  const std::uint64_t seed = testing_support::test_seed();
  const std::vector<Op> ops = long_transaction(seed, 300, 40);
  testing_support::DatabaseFiles files("tristore-log-space-sim");
  const std::string image = files.nvm_dir.file("image.nvm");
  const Simulated full = simulate_checkpoint(arch, files, image, ops, seed, 0);
  ASSERT_GE(full.fences, 1u);
  std::uint64_t crashes = 0;
  for (std::uint64_t n = 1; n <= full.fences; ++n) {
    for (std::uint64_t image_seed = seed; image_seed < seed + 3; ++image_seed) {
      SCOPED_TRACE("crash at fence " + std::to_string(n) + " of the checkpoint, image seed " +
                   std::to_string(image_seed));
      const Simulated outcome = simulate_checkpoint(arch, files, image, ops, image_seed, n);
      ASSERT_TRUE(outcome.crashed);
      ++crashes;
      testing_support::DatabaseFiles reopened("tristore-log-space-sim");
      Config config = config_for(arch, reopened, false);
      config.nvm_path = image;
      auto db = Database::open(config);
      // Appends only write; the checkpoint's first fence is the first to make the open
      // transaction's records durable (basic-nvm), so a crash there may lose them all.
      if (n == 1)
        EXPECT_LE(db->restart_report().losers, 1u);
      else
        EXPECT_EQ(db->restart_report().losers, 1u);
      auto table = db->open_table<std::uint64_t, Row>("rows");
      const Model seen = scan_all(table);
      EXPECT_TRUE(same(seen, committed_before())) << difference(committed_before(), seen);
    }
  }
  std::printf("%llu fences in the checkpoint, %llu crashes reopened\n",
              static_cast<unsigned long long>(full.fences),
              static_cast<unsigned long long>(crashes));
}

TEST(EngineLogSpaceCrashSimulator, BasicNvmRecoversFromACheckpointCutWhileCopyingUndo) {
  crash_in_checkpoint(Architecture::kBasicNvm);
}
TEST(EngineLogSpaceCrashSimulator, NvmDirectRecoversFromACheckpointCutWhileCopyingUndo) {
  crash_in_checkpoint(Architecture::kNvmDirect);
}

// The undo copies after the log's last checkpoint-begin record, in the database at config.
std::vector<Lsn> last_checkpoint_copies(const Config& config) {
  auto tier = open_nvm_tier(config, false);
  auto log =
      LogManager::open(tier->device(), split_log_area(tier->log_area(), config.architecture).log);
  std::vector<Lsn> copies;
  LogCursor cursor = log->read_from_start();
  while (std::optional<LogRecord> record = cursor.next()) {
    if (record->type == LogRecordType::kCheckpointBegin) copies.clear();
    if (record->type == LogRecordType::kUndoCopy) copies.push_back(record->lsn);
  }
  EXPECT_LT(log->checkpoint_lsn(), copies.empty() ? 0 : copies.front()) << "checkpoint missing";
  return copies;
}

// Spoils one payload byte of the record at lsn: the log now ends there (a torn tail).
void tear_record(const Config& config, Lsn lsn) {
  auto tier = open_nvm_tier(config, false);
  const std::uint64_t capacity =
      LogManager::open(tier->device(), split_log_area(tier->log_area(), config.architecture).log)
          ->capacity();
  std::byte* byte =
      tier->log_area().data() + kLogRecordAreaOffset + (lsn + sizeof(LogRecordHeader)) % capacity;
  const std::byte spoiled = *byte ^ std::byte{0x5a};
  tier->device().write(byte, &spoiled, 1);
  tier->device().persist(byte, 1);
}

// A power failure while a checkpoint copies the live undo forward leaves a prefix of the
// copies and the records they copy: undo must take each step once, in the original order.
void crash_while_copying(Architecture arch) {
  const std::uint64_t seed = testing_support::test_seed();
  const std::vector<Op> ops = long_transaction(seed, 300, 40);
  testing_support::DatabaseFiles files("tristore-log-space-sim");
  const std::string image = files.nvm_dir.file("image.nvm");
  const Simulated full = simulate_checkpoint(arch, files, image, ops, seed, 0);
  ASSERT_GE(full.fences, 3u);
  Config config = config_for(arch, files, false);
  config.nvm_path = image;
  // The fence that would name the checkpoint in the log header: its copies are all durable,
  // the header write is not (a crash image may keep it; the durable image never does).
  ASSERT_TRUE(simulate_checkpoint(arch, files, image, ops, 0, full.fences).crashed);
  const std::vector<Lsn> copies = last_checkpoint_copies(config);
  ASSERT_GT(copies.size(), 100u);
  const std::string pristine = files.nvm_dir.file("pristine.nvm");
  std::filesystem::copy_file(image, pristine);
  for (std::size_t kept :
       {std::size_t{0}, std::size_t{1}, copies.size() / 3, copies.size() / 2, copies.size() - 1}) {
    SCOPED_TRACE(std::to_string(kept) + " of " + std::to_string(copies.size()) + " copies kept");
    std::filesystem::copy_file(pristine, image, std::filesystem::copy_options::overwrite_existing);
    tear_record(config, copies[kept]);
    auto db = Database::open(config);
    EXPECT_EQ(db->restart_report().losers, 1u);
    // One undo record per operation before the checkpoint, each step once.
    EXPECT_EQ(db->restart_report().undo_records_pending, ops.size() / 2);
    auto table = db->open_table<std::uint64_t, Row>("rows");
    const Model seen = scan_all(table);
    EXPECT_TRUE(same(seen, committed_before())) << difference(committed_before(), seen);
  }
}

// The header names a checkpoint only once its copies and end record are durable; a log that
// ends inside a named checkpoint is damaged (no crash leaves it), and restart must say so
// rather than undo only the copies it can see.
void refuse_checkpoint_without_end(Architecture arch) {
  const std::uint64_t seed = testing_support::test_seed();
  const std::vector<Op> ops = long_transaction(seed, 100, 40);
  testing_support::DatabaseFiles files("tristore-log-space-sim");
  const std::string image = files.nvm_dir.file("image.nvm");
  {
    Config config = config_for(arch, files, true);
    config.nvm_crash_simulation = true;
    auto db = Database::open(config);
    auto table = db->create_table<std::uint64_t, Row>("rows");
    load(table);
    Transaction txn = db->begin();
    for (const Op& op : ops) EXPECT_TRUE(run(table, txn, op, 1));
    db->checkpoint();
    db->nvm_crash_simulator()->write_durable_image(image);
    db->nvm_crash_simulator()->arm_crash_at_fence(1);  // nothing more reaches NVM
    db->simulate_crash_on_close();
  }
  Config config = config_for(arch, files, false);
  config.nvm_path = image;
  const std::vector<Lsn> copies = last_checkpoint_copies(config);
  ASSERT_GT(copies.size(), 10u);
  tear_record(config, copies[copies.size() / 2]);
  try {
    auto db = Database::open(config);
    auto table = db->open_table<std::uint64_t, Row>("rows");
    ADD_FAILURE() << "opened a log that ends inside its named checkpoint; "
                  << difference(loaded_model(), scan_all(table));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no end record"), std::string::npos) << e.what();
  }
}

TEST(EngineLogSpaceCrashSimulator, BasicNvmRefusesACheckpointWhoseEndRecordIsMissing) {
  refuse_checkpoint_without_end(Architecture::kBasicNvm);
}
TEST(EngineLogSpaceCrashSimulator, NvmDirectRefusesACheckpointWhoseEndRecordIsMissing) {
  refuse_checkpoint_without_end(Architecture::kNvmDirect);
}

TEST(EngineLogSpaceCrashSimulator, BasicNvmUndoesOnceAndInOrderAfterAPrefixOfTheCopies) {
  crash_while_copying(Architecture::kBasicNvm);
}
TEST(EngineLogSpaceCrashSimulator, NvmDirectUndoesOnceAndInOrderAfterAPrefixOfTheCopies) {
  crash_while_copying(Architecture::kNvmDirect);
}

TEST(EngineLogSpaceCrashSimulator, BasicNvmRecoversALongTransactionCutAtAnyFence) {
  crash_at_many_fences(Architecture::kBasicNvm);
}
TEST(EngineLogSpaceCrashSimulator, NvmDirectRecoversALongTransactionCutAtAnyFence) {
  crash_at_many_fences(Architecture::kNvmDirect);
}

}  // namespace
}  // namespace tristore
