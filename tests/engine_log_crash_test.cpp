// Crash tests of the NVM write-ahead log: the crash simulator crashes at the n-th fence for
// many n, and fork + kill -9 kills a real appending process. Every record whose commit or
// persist returned must survive intact; nothing but records of the log may be read back.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "engine/log_manager.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

constexpr std::uint64_t kAreaOffset = 4096;

std::uint64_t test_seed() {
  const char* fixed = std::getenv("TRISTORE_SEED");
  const std::uint64_t seed =
      fixed != nullptr ? std::strtoull(fixed, nullptr, 10) : std::random_device{}();
  std::printf("seed %llu (TRISTORE_SEED=%llu replays)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

std::vector<std::byte> random_bytes(std::mt19937_64& rng, std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (auto& b : bytes) b = static_cast<std::byte>(rng());
  return bytes;
}

struct ModelRecord {
  Lsn lsn;
  LogRecordType type;
  TxnId txn;
  Lsn prev_lsn;
  std::vector<std::byte> payload;
};

// What the workload did before the crash, as far as calls returned.
struct CrashRun {
  std::vector<ModelRecord> records;  // every record appended, in LSN order
  std::size_t persisted = 0;         // records[0, persisted) were durable when a call returned
  Lsn committed_start = 0;           // start whose truncate_before returned
  std::vector<Lsn> requested_starts;
  bool crashed_raising_end_bound = false;  // at the fence of an append's header write

  Lsn end() const {
    return records.empty() ? committed_start
                           : records.back().lsn + log_record_size(records.back().payload.size());
  }
};

class LogCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/dev/shm/tristore-logcrash-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".nvm";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    for (int i = 0; i < 3; ++i) std::remove(image_path(i).c_str());
  }
  std::string image_path(int i) const { return path_ + ".crash" + std::to_string(i); }
  // Crashes a random workload at fences 1..300, reopens three crash images of each and checks
  // them against what the calls that returned promised.
  void crash_at_each_fence(const LogOptions& options);
  // Kills an appending child (with this many appending threads) six times at random moments;
  // every record it reported persisted must be read back intact.
  void kill_while_appending(unsigned threads);

  std::unique_ptr<NvmDevice> make_device(const std::string& path, std::uint64_t area_bytes,
                                         bool create, bool crash_simulation) const {
    NvmDeviceOptions options;
    options.path = path;
    options.size_bytes = create ? kAreaOffset + area_bytes : 0;
    options.create = create;
    options.crash_simulation = crash_simulation;
    return std::make_unique<NvmDevice>(options);
  }
  static std::span<std::byte> area(NvmDevice& device) {
    return {device.base() + kAreaOffset, device.size() - kAreaOffset};
  }

  std::string path_;
};

// Random appends, commits, persists; the on_full checkpoint truncates about half the log.
void run_until_crash(LogManager& log, CrashSimulator& simulator, std::mt19937_64& rng,
                     CrashRun& run) {
  // An ordinary append fences only to persist a raised end bound; checkpoints fence too.
  bool appending = false;
  bool checkpointing = false;
  log.set_on_full([&] {
    checkpointing = true;
    const Lsn begin = log.append(LogRecordType::kCheckpointBegin, 0, kNoLsn);
    run.records.push_back({begin, LogRecordType::kCheckpointBegin, 0, kNoLsn, {}});
    std::size_t keep = run.records.size() - 1;
    const Lsn middle = log.start_lsn() + (begin - log.start_lsn()) / 2;
    if (rng() % 2 == 0)
      while (keep > 0 && run.records[keep - 1].lsn >= middle) --keep;
    const Lsn start = run.records[keep].lsn;
    run.requested_starts.push_back(start);
    log.complete_checkpoint(begin, start);
    run.persisted = run.records.size();  // complete_checkpoint persisted everything
    run.committed_start = start;
    checkpointing = false;
  });
  TxnId committing = 0;
  try {
    for (int op = 0; op < 100000 && !simulator.crashed(); ++op) {
      const TxnId txn = rng() % 16;
      const std::uint64_t choice = rng() % 10;
      if (choice < 6) {
        const auto type = static_cast<LogRecordType>(1 + rng() % 3);  // redo, image, undo
        const Lsn prev = run.records.empty() ? kNoLsn : run.records.back().lsn;
        ModelRecord record{0, type, txn, prev, random_bytes(rng, rng() % 600)};
        appending = true;
        record.lsn = log.append(type, txn, prev, {record.payload});
        appending = false;
        run.records.push_back(std::move(record));
      } else if (choice < 9) {
        committing = txn;
        log.commit(txn, kNoLsn);
        // Not pushed before: an on_full checkpoint may append ahead of the commit record.
        run.records.push_back(
            {log.end_lsn() - log_record_size(0), LogRecordType::kCommit, txn, kNoLsn, {}});
        run.persisted = run.records.size();
      } else {
        const std::size_t appended = run.records.size();
        log.persist_up_to(log.end_lsn());
        run.persisted = appended;
      }
    }
  } catch (const SimulatedCrash&) {
    run.crashed_raising_end_bound = appending && !checkpointing;
    // A commit whose fence crashed: its record was appended, the model has not seen it yet.
    if (log.end_lsn() != run.end()) {
      ASSERT_EQ(log.end_lsn(), run.end() + log_record_size(0));
      run.records.push_back({run.end(), LogRecordType::kCommit, committing, kNoLsn, {}});
    }
  }
  ASSERT_TRUE(simulator.crashed()) << "the armed fence was never reached";
}

// The recovered log must be the model's records from its start on, at least up to the last
// persisted one, and nothing else.
struct RecoveryTally {
  std::size_t persisted = 0;              // persisted records found intact
  std::size_t unpersisted_survivors = 0;  // records read back that no call had made durable
  std::size_t torn_tails = 0;             // recoveries that ended before the last appended record
  std::size_t end_bound_crashes = 0;      // crashes at the fence of an end bound's header write
};

void expect_recovered(const CrashRun& run, const LogManager& log, RecoveryTally& tally) {
  ASSERT_EQ(log.end_bound(), log.end_lsn() + log.end_bound_step()) << "open persists a new bound";
  const Lsn start = log.start_lsn();
  ASSERT_GE(start, run.committed_start);
  if (start != run.committed_start) {
    ASSERT_EQ(start, run.requested_starts.back()) << "start is no truncation point";
  }
  std::size_t first = 0;
  while (first < run.records.size() && run.records[first].lsn < start) ++first;
  if (first < run.records.size()) {
    ASSERT_EQ(run.records[first].lsn, start);
  }

  auto cursor = log.read_from_start();
  std::size_t index = first;
  while (auto record = cursor.next()) {
    ASSERT_LT(index, run.records.size()) << "record beyond everything appended at " << record->lsn;
    const ModelRecord& expected = run.records[index];
    ASSERT_EQ(record->lsn, expected.lsn);
    ASSERT_EQ(record->type, expected.type) << "at LSN " << record->lsn;
    ASSERT_EQ(record->txn, expected.txn) << "at LSN " << record->lsn;
    ASSERT_EQ(record->prev_lsn, expected.prev_lsn) << "at LSN " << record->lsn;
    ASSERT_TRUE(std::equal(record->payload.begin(), record->payload.end(), expected.payload.begin(),
                           expected.payload.end()))
        << "payload differs at LSN " << record->lsn;
    ++index;
  }
  ASSERT_GE(index, run.persisted) << "a persisted record was lost";
  tally.persisted += run.persisted > first ? run.persisted - first : 0;
  tally.unpersisted_survivors += index - std::max(run.persisted, first);
  if (index < run.records.size()) ++tally.torn_tails;
  if (log.checkpoint_lsn() != kNoLsn) {
    auto from_checkpoint = log.read_from_checkpoint();
    const auto begin = from_checkpoint.next();
    ASSERT_TRUE(begin);
    EXPECT_EQ(begin->type, LogRecordType::kCheckpointBegin);
  }
}

void LogCrashTest::crash_at_each_fence(const LogOptions& options) {
  const std::uint64_t seed = test_seed();
  RecoveryTally tally;
  std::uint64_t laps = 0;
  for (std::uint64_t n = 1; n <= 300; ++n) {
    SCOPED_TRACE("crash at fence " + std::to_string(n) + ", seed " + std::to_string(seed));
    std::mt19937_64 rng(seed * 1000003 + n);
    CrashRun crashed;
    std::vector<std::uint64_t> image_seeds;
    {
      auto device = make_device(path_, 16 << 10, /*create=*/true, /*crash_simulation=*/true);
      auto log = LogManager::create(*device, area(*device), options);
      crashed.committed_start = log->start_lsn();
      device->crash_simulator()->arm_crash_at_fence(n);
      ASSERT_NO_FATAL_FAILURE(run_until_crash(*log, *device->crash_simulator(), rng, crashed));
      if (crashed.crashed_raising_end_bound) ++tally.end_bound_crashes;
      laps += crashed.end() / log->capacity();
      for (int i = 0; i < 3; ++i) {
        image_seeds.push_back(rng());
        device->crash_simulator()->write_crash_image(image_seeds.back(), image_path(i));
      }
    }
    for (int i = 0; i < 3; ++i) {
      SCOPED_TRACE("crash image seed " + std::to_string(image_seeds[i]));
      // Reopen the crash image, check it, append after the recovered end, reopen again.
      CrashRun run = crashed;
      {
        auto device = make_device(image_path(i), 0, /*create=*/false, /*crash_simulation=*/false);
        auto log = LogManager::open(*device, area(*device), options);
        ASSERT_NO_FATAL_FAILURE(expect_recovered(run, *log, tally));
        run.records.erase(std::lower_bound(run.records.begin(), run.records.end(), log->end_lsn(),
                                           [](const ModelRecord& r, Lsn l) { return r.lsn < l; }),
                          run.records.end());
        run.requested_starts.clear();
        run.committed_start = log->start_lsn();
        for (int j = 0; j < 3 && log->free_bytes() > 1000; ++j) {
          ModelRecord record{0, LogRecordType::kUndoLogical, 99, kNoLsn, random_bytes(rng, 300)};
          record.lsn = log->append(record.type, record.txn, record.prev_lsn, {record.payload});
          run.records.push_back(std::move(record));
        }
        log->persist_up_to(log->end_lsn());
        run.persisted = run.records.size();
      }
      auto device = make_device(image_path(i), 0, /*create=*/false, /*crash_simulation=*/false);
      auto log = LogManager::open(*device, area(*device), options);
      ASSERT_NO_FATAL_FAILURE(expect_recovered(run, *log, tally));
    }
  }
  std::printf(
      "%zu persisted records verified, %zu unpersisted ones survived, %zu torn tails, "
      "%llu log laps, %zu crashes raising the end bound\n",
      tally.persisted, tally.unpersisted_survivors, tally.torn_tails,
      static_cast<unsigned long long>(laps), tally.end_bound_crashes);
  EXPECT_GT(laps, 100u) << "the log rarely wrapped around";
  EXPECT_GT(tally.persisted, 1000u) << "too few persisted records were checked to mean anything";
  EXPECT_GT(tally.torn_tails, 0u) << "no crash image ended in a torn record";
  EXPECT_GT(tally.end_bound_crashes, 0u) << "no crash hit the header write of an end bound";
}

TEST_F(LogCrashTest, CrashAtTheNthFenceKeepsEveryPersistedRecordAndNothingElse) {
  crash_at_each_fence({});
}

// A bound step shorter than many records: most appends raise the bound first.
TEST_F(LogCrashTest, CrashAtTheNthFenceWithASmallEndBoundStepKeepsEveryPersistedRecord) {
  crash_at_each_fence({.end_bound_step = 256});
}

// What the child reports through the pipe once a record is durable.
struct Report {
  Lsn lsn;
  std::uint64_t round;
  std::uint64_t index;
};

std::vector<std::byte> child_payload(std::uint64_t seed, std::uint64_t round, std::uint64_t index) {
  std::mt19937_64 rng(seed ^ (round << 40) ^ index);
  return random_bytes(rng, rng() % 1200);
}

// threads appenders at once, each with its own indexes (thread << 32 | i), reporting through
// one pipe (a report is one write of less than PIPE_BUF bytes, so reports never interleave).
[[noreturn]] void append_until_killed(const std::string& path, std::uint64_t seed,
                                      std::uint64_t round, int report_fd, unsigned threads) {
  NvmDeviceOptions options;
  options.path = path;
  NvmDevice device(options);
  auto log = LogManager::open(device, {device.base() + kAreaOffset, device.size() - kAreaOffset});
  std::mutex lsns_mutex;
  std::set<Lsn> lsns;  // records appended (each a record start)
  log->set_on_full([&] {
    const Lsn begin = log->append(LogRecordType::kCheckpointBegin, 0, kNoLsn);
    const Lsn middle = log->start_lsn() + (begin - log->start_lsn()) / 2;
    Lsn start = begin;
    {
      std::lock_guard lock(lsns_mutex);
      lsns.erase(lsns.begin(), lsns.lower_bound(middle));
      if (!lsns.empty() && *lsns.begin() < begin) start = *lsns.begin();
    }
    log->truncate_before(start);
  });
  const auto append_loop = [&](std::uint64_t thread) {
    std::vector<Report> pending;
    for (std::uint64_t i = 0; i < 10'000'000; ++i) {
      const std::uint64_t index = thread << 32 | i;
      const std::vector<std::byte> payload = child_payload(seed, round, index);
      // prev_lsn carries the index: the parent regenerates the payload from it.
      const Lsn lsn = log->append(LogRecordType::kUndoLogical, round, index, {payload});
      {
        std::lock_guard lock(lsns_mutex);
        lsns.insert(lsn);
      }
      pending.push_back({lsn, round, index});
      if (i % 7 == 6) {
        log->commit(round, lsn);
      } else if (i % 5 == 4) {
        log->persist_up_to(lsn);
      } else {
        continue;
      }
      const auto bytes = static_cast<ssize_t>(pending.size() * sizeof(Report));
      if (::write(report_fd, pending.data(), static_cast<std::size_t>(bytes)) != bytes) ::_exit(2);
      pending.clear();
    }
  };
  std::vector<std::thread> others;
  for (unsigned t = 1; t < threads; ++t) others.emplace_back(append_loop, t);
  append_loop(0);
  ::_exit(0);
}

void LogCrashTest::kill_while_appending(unsigned threads) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  {
    auto device = make_device(path_, 256 << 10, /*create=*/true, /*crash_simulation=*/false);
    LogManager::create(*device, area(*device));
  }
  std::size_t verified = 0;
  for (std::uint64_t round = 1; round <= 6; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + ", seed " + std::to_string(seed));
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    ASSERT_EQ(::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK), 0);  // drained while the child runs
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      append_until_killed(path_, seed, round, pipe_fds[1], threads);
    }
    ::close(pipe_fds[1]);
    // Drain the pipe while the child runs (a full pipe would stall it), then kill it.
    std::vector<char> received;
    const auto drain = [&] {
      char chunk[4096];
      ssize_t n;
      while ((n = ::read(pipe_fds[0], chunk, sizeof(chunk))) > 0)
        received.insert(received.end(), chunk, chunk + n);
    };
    const auto kill_at =
        std::chrono::steady_clock::now() + std::chrono::microseconds(2000 + rng() % 40000);
    while (std::chrono::steady_clock::now() < kill_at) {
      drain();
      ::usleep(200);
    }
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(testing_support::killed_by_sigkill(status))
        << "the child ended before it was killed: " << testing_support::how_child_ended(status);
    drain();
    ::close(pipe_fds[0]);
    std::vector<Report> reports(received.size() / sizeof(Report));
    std::memcpy(reports.data(), received.data(), reports.size() * sizeof(Report));

    auto device = make_device(path_, 0, /*create=*/false, /*crash_simulation=*/false);
    auto log = LogManager::open(*device, area(*device));
    std::map<Lsn, std::pair<LogRecord, std::vector<std::byte>>> found;
    auto cursor = log->read_from_start();
    while (auto record = cursor.next())
      found.emplace(record->lsn, std::pair{*record, std::vector(record->payload.begin(),
                                                                record->payload.end())});
    for (const Report& r : reports) {
      if (r.lsn < log->start_lsn()) continue;  // truncated by a checkpoint
      const auto it = found.find(r.lsn);
      ASSERT_NE(it, found.end()) << "persisted record at LSN " << r.lsn << " lost";
      EXPECT_EQ(it->second.first.txn, r.round);
      EXPECT_EQ(it->second.first.prev_lsn, r.index);
      EXPECT_EQ(it->second.second, child_payload(seed, r.round, r.index))
          << "payload differs at LSN " << r.lsn;
      ++verified;
    }
  }
  std::printf("%zu persisted records of killed children verified\n", verified);
  EXPECT_GT(verified, 0u) << "the children never reported a persisted record";
}

TEST_F(LogCrashTest, KillNineWhileAppendingLosesNoReportedRecord) { kill_while_appending(1); }

// Four appending threads: the kill leaves records half copied with whole ones after them.
TEST_F(LogCrashTest, KillNineWhileFourThreadsAppendLosesNoReportedRecord) {
  kill_while_appending(4);
}

// What one of several appending threads did: a record (undo, payload from its index) or a
// commit, and whether the commit returned before the machine went down.
struct ThreadRecord {
  Lsn lsn;
  std::uint32_t index;
  bool commit;
  bool acknowledged;
};

std::vector<std::byte> thread_payload(std::uint64_t seed, std::uint64_t thread,
                                      std::uint64_t index) {
  std::mt19937_64 rng(seed ^ (thread << 48) ^ index);
  return random_bytes(rng, rng() % 300);
}

// Group commit: six threads append and commit at once, and a crash hits a fence while other
// threads' records are still being written or flushed. Every commit acknowledged before the
// crash, and every record of any thread before it, must come back intact. The scheduler picks
// the interleaving; the seed fixes the crash points, the payloads and the surviving words.
TEST_F(LogCrashTest, ConcurrentCommitsCutAtAFenceKeepEveryAcknowledgedCommitAndAllBeforeIt) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  constexpr std::uint32_t kThreads = 6;
  std::uint64_t acknowledged = 0;
  std::uint64_t verified = 0;
  std::uint64_t lost_in_flight = 0;  // records appended, never acknowledged, not recovered
  for (int round = 0; round < 40; ++round) {
    const std::uint64_t crash_at = 1 + rng() % 300;
    const std::uint64_t image_seed = rng();
    SCOPED_TRACE("round " + std::to_string(round) + ", crash at fence " + std::to_string(crash_at) +
                 ", seed " + std::to_string(seed));
    auto device = make_device(path_, 64 << 10, /*create=*/true, /*crash_simulation=*/true);
    CrashSimulator& simulator = *device->crash_simulator();
    // One append in eight gives up its core between reserving and writing: records before
    // others still in flight, finished out of order.
    LogOptions options;
    options.after_reserve = [](Lsn lsn) {
      if ((lsn / kLogRecordAlignment) % 8 == 0) std::this_thread::yield();
    };
    auto log = LogManager::create(*device, area(*device), options);
    log->set_on_full([&] { log->truncate_before(log->end_lsn()); });
    simulator.arm_crash_at_fence(crash_at);

    std::vector<std::vector<ThreadRecord>> appended(kThreads);
    std::vector<std::thread> threads;
    for (std::uint32_t t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        try {
          for (std::uint32_t i = 0; i < 200000 && !simulator.crashed(); ++i) {
            if (i % 4 == 3) {
              const Lsn lsn = log->commit(t, appended[t].back().lsn);
              // A fence after the crash makes nothing durable: no acknowledgement then.
              appended[t].push_back({lsn, i, true, !simulator.crashed()});
            } else {
              const Lsn lsn =
                  log->append(LogRecordType::kUndoLogical, t, i, {thread_payload(seed, t, i)});
              appended[t].push_back({lsn, i, false, false});
            }
          }
        } catch (const SimulatedCrash&) {
        }
      });
    for (auto& thread : threads) thread.join();
    ASSERT_TRUE(simulator.crashed()) << "the armed fence was never reached";

    simulator.write_crash_image(image_seed, image_path(0));
    log.reset();
    device = make_device(image_path(0), 0, /*create=*/false, /*crash_simulation=*/false);
    log = LogManager::open(*device, area(*device));
    std::map<Lsn, std::pair<LogRecord, std::vector<std::byte>>> found;
    auto cursor = log->read_from_start();
    while (auto record = cursor.next())
      found.emplace(record->lsn, std::pair{*record, std::vector(record->payload.begin(),
                                                                record->payload.end())});

    Lsn last_acknowledged = kNoLsn;
    for (const auto& records : appended)
      for (const ThreadRecord& r : records)
        if (r.acknowledged) last_acknowledged = std::max(last_acknowledged, r.lsn);
    for (std::uint32_t t = 0; t < kThreads; ++t)
      for (const ThreadRecord& r : appended[t]) {
        acknowledged += r.acknowledged ? 1 : 0;
        const auto it = found.find(r.lsn);
        if (it == found.end()) {
          ASSERT_TRUE(r.lsn < log->start_lsn() || r.lsn > last_acknowledged)
              << "thread " << t << " lost its record " << r.index << " at LSN " << r.lsn
              << ", before the commit acknowledged at LSN " << last_acknowledged;
          lost_in_flight += r.lsn > last_acknowledged ? 1 : 0;
          continue;
        }
        // Whatever came back is exactly what was appended there.
        const auto& [record, payload] = it->second;
        EXPECT_EQ(record.txn, t);
        EXPECT_EQ(record.type, r.commit ? LogRecordType::kCommit : LogRecordType::kUndoLogical);
        if (!r.commit) {
          EXPECT_EQ(record.prev_lsn, r.index);
          EXPECT_EQ(payload, thread_payload(seed, t, r.index)) << "LSN " << r.lsn;
        }
        ++verified;
      }
  }
  std::printf("%llu acknowledged commits, %llu records verified, %llu in flight lost\n",
              static_cast<unsigned long long>(acknowledged),
              static_cast<unsigned long long>(verified),
              static_cast<unsigned long long>(lost_in_flight));
  EXPECT_GT(acknowledged, 0u);
  EXPECT_GT(lost_in_flight, 0u) << "no crash cut records that were still in flight";
}

}  // namespace
}  // namespace tristore
