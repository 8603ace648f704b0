// Latency of the NVM write-ahead log on a /dev/shm mapping: one record appended (copy + flush),
// appended and committed (+ commit record + fence), group commit (16 records, one fence), and
// commits from several threads at once, which share fences.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/log_manager.hpp"

namespace tristore {
namespace {

constexpr std::uint64_t kAreaOffset = 4096;
constexpr std::uint64_t kAreaBytes = 64ull << 20;

// A fresh device and log per benchmark; a full log is truncated whole (no checkpoint cost).
class BenchLog {
 public:
  explicit BenchLog(const std::string& tag)
      : path_("/dev/shm/tristore-logbench-" + std::to_string(::getpid()) + "-" + tag + ".nvm") {
    NvmDeviceOptions options;
    options.path = path_;
    options.size_bytes = kAreaOffset + kAreaBytes;
    options.create = true;
    device_ = std::make_unique<NvmDevice>(options);
    log_ = LogManager::create(*device_, {device_->base() + kAreaOffset, kAreaBytes});
    log_->set_on_full([this] { log_->truncate_before(log_->end_lsn()); });
  }
  ~BenchLog() {
    log_.reset();
    device_.reset();
    std::remove(path_.c_str());
  }
  LogManager& log() { return *log_; }

 private:
  std::string path_;
  std::unique_ptr<NvmDevice> device_;
  std::unique_ptr<LogManager> log_;
};

void BM_Append(benchmark::State& state) {
  BenchLog bench("append");
  const std::vector<std::byte> payload(static_cast<std::size_t>(state.range(0)), std::byte{7});
  TxnId txn = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(
        bench.log().append(LogRecordType::kUndoLogical, ++txn, kNoLsn, {payload}));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * payload.size()));
}
BENCHMARK(BM_Append)->Arg(100)->Arg(1024);

void BM_AppendAndCommit(benchmark::State& state) {
  BenchLog bench("commit");
  const std::vector<std::byte> payload(static_cast<std::size_t>(state.range(0)), std::byte{7});
  TxnId txn = 0;
  for (auto _ : state) {
    const Lsn lsn = bench.log().append(LogRecordType::kUndoLogical, ++txn, kNoLsn, {payload});
    benchmark::DoNotOptimize(bench.log().commit(txn, lsn));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["fences/commit"] = benchmark::Counter(
      static_cast<double>(bench.log().stats().fences) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_AppendAndCommit)->Arg(100)->Arg(1024);

void BM_GroupCommitOf16(benchmark::State& state) {
  BenchLog bench("group");
  const std::vector<std::byte> payload(static_cast<std::size_t>(state.range(0)), std::byte{7});
  TxnId txn = 0;
  for (auto _ : state) {
    Lsn last = kNoLsn;
    for (int i = 0; i < 16; ++i) {
      const Lsn lsn = bench.log().append(LogRecordType::kUndoLogical, ++txn, kNoLsn, {payload});
      last = bench.log().append(LogRecordType::kCommit, txn, lsn);
    }
    bench.log().persist_up_to(last);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 16));
}
BENCHMARK(BM_GroupCommitOf16)->Arg(100)->Arg(1024);

// One log for the threads of BM_ConcurrentCommit.
BenchLog* shared_log = nullptr;
std::uint64_t shared_fences_before = 0;

void BM_ConcurrentCommit(benchmark::State& state) {
  LogManager& log = shared_log->log();
  const std::vector<std::byte> payload(100, std::byte{7});
  const auto txn = static_cast<TxnId>(state.thread_index());
  for (auto _ : state) {
    const Lsn lsn = log.append(LogRecordType::kUndoLogical, txn, kNoLsn, {payload});
    benchmark::DoNotOptimize(log.commit(txn, lsn));
  }
  // Every thread has finished its loop here (the benchmark's end barrier).
  const double commits = static_cast<double>(state.iterations() * state.threads());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["fences/commit"] =
      benchmark::Counter(static_cast<double>(log.stats().fences - shared_fences_before) / commits,
                         benchmark::Counter::kAvgThreads);
}
// Appends only (no commit), from several threads at once: the cost of sharing the reservation
// and the completion watermark.
void BM_ConcurrentAppend(benchmark::State& state) {
  LogManager& log = shared_log->log();
  const std::vector<std::byte> payload(100, std::byte{7});
  const auto txn = static_cast<TxnId>(state.thread_index());
  for (auto _ : state)
    benchmark::DoNotOptimize(log.append(LogRecordType::kUndoLogical, txn, kNoLsn, {payload}));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_ConcurrentAppend)
    ->Setup([](const benchmark::State&) { shared_log = new BenchLog("concurrent-append"); })
    ->Teardown([](const benchmark::State&) {
      delete shared_log;
      shared_log = nullptr;
    })
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

BENCHMARK(BM_ConcurrentCommit)
    ->Setup([](const benchmark::State&) {
      shared_log = new BenchLog("concurrent");
      shared_fences_before = shared_log->log().stats().fences;
    })
    ->Teardown([](const benchmark::State&) {
      delete shared_log;
      shared_log = nullptr;
    })
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();

}  // namespace
}  // namespace tristore

BENCHMARK_MAIN();
