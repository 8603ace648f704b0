// Latency of the NVM write-ahead log on a /dev/shm mapping: one record appended (copy + flush),
// appended and committed (+ commit record + fence), and group commit (16 records, one fence).
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

}  // namespace
}  // namespace tristore

BENCHMARK_MAIN();
