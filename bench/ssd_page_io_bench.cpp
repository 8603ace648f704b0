// SSD tier latency at queue depth 1: random 16 KiB page reads and writes with O_DIRECT on a
// file of a few hundred MiB under $TMPDIR (or /tmp), plus the cost of sync().
// Environment: TRISTORE_SSD_BENCH_MIB (file size, default 256), TRISTORE_SSD_BENCH_DIR.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include "ssd/aligned_page_buffer.hpp"
#include "ssd/ssd_page_file.hpp"

using namespace tristore;

namespace {

// One filled file shared by all benchmarks of the run, removed at exit.
struct BenchFile {
  std::filesystem::path directory;
  std::unique_ptr<SsdPageFile> file;

  BenchFile() {
    const char* base = std::getenv("TRISTORE_SSD_BENCH_DIR");
    if (base == nullptr) base = std::getenv("TMPDIR");
    std::string pattern = std::string(base ? base : "/tmp") + "/tristore-ssd-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    directory = pattern;
    const char* mib = std::getenv("TRISTORE_SSD_BENCH_MIB");
    SsdOptions options;
    options.path = (directory / "bench.ssd").string();
    options.size_bytes = (mib ? std::strtoull(mib, nullptr, 10) : 256) << 20;
    options.create = true;
    file = SsdPageFile::create(options);
    // Every page written once, so reads hit real, checksummed data.
    AlignedPageBuffer page(kPageSize);
    std::mt19937_64 random(1);
    for (std::size_t i = 0; i < kPageSize; ++i) page.data()[i] = static_cast<std::byte>(random());
    for (PageId id = 0; id < file->page_capacity(); ++id)
      file->write(file->allocate(), page.data());
    file->sync();
    std::fprintf(stderr, "ssd bench file %s: %llu pages, O_DIRECT %s\n", options.path.c_str(),
                 static_cast<unsigned long long>(file->page_capacity()),
                 file->direct_io() ? "on" : "off (buffered fallback)");
  }
  ~BenchFile() {
    file.reset();
    std::filesystem::remove_all(directory);
  }
};

SsdPageFile& bench_file() {
  static BenchFile instance;
  return *instance.file;
}

void BM_SsdRandomRead(benchmark::State& state) {
  SsdPageFile& file = bench_file();
  AlignedPageBuffer page(kPageSize);
  std::mt19937_64 random(static_cast<std::uint64_t>(state.thread_index()) + 7);
  for (auto _ : state) {
    file.read(random() % file.page_capacity(), page.data());
    benchmark::DoNotOptimize(page.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPageSize));
}
BENCHMARK(BM_SsdRandomRead)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_SsdRandomRead)->UseRealTime()->MinTime(2.0)->Threads(4);

void BM_SsdRandomReadUnalignedBuffer(benchmark::State& state) {
  SsdPageFile& file = bench_file();
  std::vector<std::byte> storage(kPageSize + 1);
  std::mt19937_64 random(11);
  for (auto _ : state) {
    file.read(random() % file.page_capacity(), storage.data() + 1);
    benchmark::DoNotOptimize(storage.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPageSize));
}
BENCHMARK(BM_SsdRandomReadUnalignedBuffer)->UseRealTime()->MinTime(2.0);

void BM_SsdRandomWrite(benchmark::State& state) {
  SsdPageFile& file = bench_file();
  AlignedPageBuffer page(kPageSize);
  std::memset(page.data(), 0x5A, kPageSize);
  std::mt19937_64 random(static_cast<std::uint64_t>(state.thread_index()) + 13);
  for (auto _ : state) file.write(random() % file.page_capacity(), page.data());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPageSize));
}
BENCHMARK(BM_SsdRandomWrite)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_SsdRandomWrite)->UseRealTime()->MinTime(2.0)->Threads(4);

// A write made durable on its own: the write-back path when a page must reach the device now.
void BM_SsdRandomWriteThenSync(benchmark::State& state) {
  SsdPageFile& file = bench_file();
  AlignedPageBuffer page(kPageSize);
  std::memset(page.data(), 0x3C, kPageSize);
  std::mt19937_64 random(17);
  for (auto _ : state) {
    file.write(random() % file.page_capacity(), page.data());
    file.sync();
  }
}
BENCHMARK(BM_SsdRandomWriteThenSync)->UseRealTime()->MinTime(2.0);

// sync() after a free + allocate: a new superblock generation (bitmap + superblock + 3 fdatasync).
void BM_SsdSyncNewGeneration(benchmark::State& state) {
  SsdPageFile& file = bench_file();
  for (auto _ : state) {
    file.free(0);
    file.allocate();
    file.sync();
  }
}
BENCHMARK(BM_SsdSyncNewGeneration)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
