// What persisting and reading NVM cost on this machine: flush + fence of one line and of one
// page on the default NVM path, and one line read with 0, 300 and 500 ns injected latency,
// with and without the simulated LLC filter, over random lines of a region much larger than
// the simulated LLC and over a small hot set.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "emulation/nvm_device.hpp"

namespace tristore {
namespace {

constexpr std::uint64_t kPersistRegionBytes = 64ull << 20;
constexpr std::uint64_t kReadRegionBytes = 1ull << 30;
constexpr std::uint64_t kSimulatedLlcBytes = 32ull << 20;  // a server LLC; region is 32x larger
constexpr std::uint64_t kHotLines = 1024;                  // 64 KiB hot set

// Removes the benchmark's file when the device goes away.
struct BenchDevice {
  std::string path;
  std::unique_ptr<NvmDevice> device;

  BenchDevice(const std::string& tag, NvmDeviceOptions options) : path(default_nvm_path(tag)) {
    options.path = path;
    options.create = true;
    device = std::make_unique<NvmDevice>(options);
  }
  ~BenchDevice() {
    device.reset();
    std::remove(path.c_str());
  }
};

std::uint64_t next_random(std::uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

void BM_PersistCacheLine(benchmark::State& state) {
  NvmDeviceOptions options;
  options.size_bytes = kPersistRegionBytes;
  BenchDevice bench("bench-persist-line", options);
  NvmDevice& device = *bench.device;
  const std::uint64_t lines = device.size() / kCacheLineSize;
  std::uint64_t line = 0;
  for (auto _ : state) {
    std::byte* target = device.base() + line * kCacheLineSize;
    std::memcpy(target, &line, sizeof(line));
    device.persist(target, kCacheLineSize);
    line = line + 1 == lines ? 0 : line + 1;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kCacheLineSize));
  state.SetLabel(device.is_pmem() ? "pmem" : "not pmem (tmpfs)");
}
BENCHMARK(BM_PersistCacheLine);

void BM_PersistPage(benchmark::State& state) {
  NvmDeviceOptions options;
  options.size_bytes = kPersistRegionBytes;
  BenchDevice bench("bench-persist-page", options);
  NvmDevice& device = *bench.device;
  const std::uint64_t pages = device.size() / kPageSize;
  std::vector<std::byte> page(kPageSize, std::byte{7});
  std::uint64_t index = 0;
  for (auto _ : state) {
    std::byte* target = device.base() + index * kPageSize;
    std::memcpy(target, page.data(), kPageSize);
    device.persist(target, kPageSize);
    index = index + 1 == pages ? 0 : index + 1;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPageSize));
  state.SetLabel(device.is_pmem() ? "pmem" : "not pmem (tmpfs)");
}
BENCHMARK(BM_PersistPage);

// Args: injected read ns, LLC filter (1/0), hot set (1) or random over the region (0).
void BM_ReadLine(benchmark::State& state) {
  NvmDeviceOptions options;
  options.size_bytes = kReadRegionBytes;
  options.read_ns = static_cast<std::uint32_t>(state.range(0));
  options.llc_filter = state.range(1) != 0;
  options.llc_bytes = kSimulatedLlcBytes;
  BenchDevice bench("bench-read", options);
  NvmDevice& device = *bench.device;
  std::memset(device.base(), 1, device.size());  // fault every page in before measuring
  const std::uint64_t lines = state.range(2) != 0 ? kHotLines : device.size() / kCacheLineSize;
  std::uint64_t random = 88172645463325252ull;
  std::byte buffer[kCacheLineSize];
  for (auto _ : state) {
    const std::uint64_t line = next_random(random) % lines;
    device.read(buffer, device.base() + line * kCacheLineSize, kCacheLineSize);
    benchmark::DoNotOptimize(buffer);
  }
  const Counters& counters = device.counters();
  state.counters["llc_miss_ratio"] =
      counters.nvm_lines_read == 0
          ? 0.0
          : static_cast<double>(counters.llc_misses) / static_cast<double>(counters.nvm_lines_read);
  state.SetLabel(std::string(state.range(2) != 0 ? "hot 64KiB" : "random 1GiB") +
                 (state.range(1) != 0 ? ", LLC filter" : ", no filter"));
}
BENCHMARK(BM_ReadLine)
    ->ArgsProduct({{0, 300, 500}, {1, 0}, {0, 1}})
    ->ArgNames({"ns", "filter", "hot"});

}  // namespace
}  // namespace tristore

BENCHMARK_MAIN();
