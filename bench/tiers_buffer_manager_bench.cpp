// Buffer-manager hot paths: a swizzled fix vs a fix through the page table (the swizzling
// gain), make_resident of a resident line on a full frame and on a mini page, and loading one
// line from NVM at 0 and 500 ns injected latency (every line charged: no simulated LLC).
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "nvm/nvm_layout.hpp"
#include "tiers/buffer_manager.hpp"

namespace tristore {
namespace {

using Guard = BufferManager::Guard;

constexpr std::uint64_t kPages = 4096;  // pages in NVM: a page table of realistic size

// NVM under /dev/shm and SSD under a mkdtemp directory, kPages pages admitted to NVM.
class Setup {
 public:
  Setup(bool swizzling, bool mini_pages, std::uint32_t read_ns = 0) {
    const std::string tag = std::to_string(::getpid());
    nvm_path_ = "/dev/shm/tristore-bench-tiers-" + tag + ".nvm";
    std::string pattern = "/tmp/tristore-bench-tiers-XXXXXX";
    dir_ = mkdtemp(pattern.data());
    NvmTierOptions nvm_options;
    nvm_options.device.path = nvm_path_;
    nvm_options.device.size_bytes = NvmLayout::compute(kPages + 16, 4096).end;
    nvm_options.device.create = true;
    nvm_options.device.read_ns = read_ns;
    nvm_options.device.llc_filter = false;
    nvm_options.log_bytes = 4096;
    nvm = NvmTier::create(nvm_options);
    SsdOptions ssd_options;
    ssd_options.path = dir_ + "/pages.ssd";
    ssd_options.size_bytes = (kPages + 64) * kPageSize;
    ssd_options.create = true;
    ssd = SsdPageFile::create(ssd_options);
    BufferManagerOptions options;
    options.dram_bytes = 64 * FramePool::kSlabBytes;
    options.nvm = nvm.get();
    options.ssd = ssd.get();
    options.swizzling = swizzling;
    options.mini_pages = mini_pages;
    bm = std::make_unique<BufferManager>(options);
    for (std::uint64_t i = 0; i < kPages; ++i) {
      Guard page = bm->allocate_page();
      std::memset(page.whole_page() + 64, static_cast<int>(i), kPageSize - 64);
      page.mark_dirty(64, kPageSize - 64);
      if (i == kPages / 2) root = bm->swip_of(page);
    }
    bm->flush_all();
  }
  ~Setup() {
    bm.reset();
    nvm.reset();
    ssd.reset();
    std::filesystem::remove(nvm_path_);
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<NvmTier> nvm;
  std::unique_ptr<SsdPageFile> ssd;
  std::unique_ptr<BufferManager> bm;
  Swip root;

 private:
  std::string nvm_path_, dir_;
};

void fix_and_read_hot_line(benchmark::State& state, bool swizzling) {
  Setup setup(swizzling, /*mini_pages=*/true);
  {
    Guard warm = setup.bm->fix(setup.root, nullptr);
    warm.read(1000, 8);
  }
  for (auto _ : state) {
    Guard page = setup.bm->fix(setup.root, nullptr);
    benchmark::DoNotOptimize(*page.read(1000, 8));
  }
  state.counters["swizzled_hits"] = static_cast<double>(setup.bm->counters().swizzled_hits);
}
void BM_SwizzledFixAndHotLine(benchmark::State& state) { fix_and_read_hot_line(state, true); }
void BM_PageTableFixAndHotLine(benchmark::State& state) { fix_and_read_hot_line(state, false); }
BENCHMARK(BM_SwizzledFixAndHotLine);
BENCHMARK(BM_PageTableFixAndHotLine);

// A resident line of a partially resident, NVM-backed page: a mask test (full) or a slot
// search (mini) on every call.
void resident_line(benchmark::State& state, bool mini_pages) {
  Setup setup(true, mini_pages);
  Guard page = setup.bm->fix(setup.root, nullptr);
  for (std::uint32_t line : {3u, 17u, 40u, 90u, 130u, 200u, 250u}) page.read(line * 64, 8);
  std::uint32_t offset = 130 * 64 + 8;
  for (auto _ : state) {
    benchmark::DoNotOptimize(page.read(offset, 8));
    benchmark::ClobberMemory();
  }
  state.SetLabel(page.on_mini_page() ? "mini page" : "full frame");
}
void BM_ResidentLineFullFrame(benchmark::State& state) { resident_line(state, false); }
void BM_ResidentLineMiniPage(benchmark::State& state) { resident_line(state, true); }
BENCHMARK(BM_ResidentLineFullFrame);
BENCHMARK(BM_ResidentLineMiniPage);

// One missing line loaded into a full frame per iteration; every 255 lines the (clean) page
// is evicted and fixed again, outside the timing.
void BM_LoadLineFromNvm(benchmark::State& state) {
  Setup setup(true, /*mini_pages=*/false, static_cast<std::uint32_t>(state.range(0)));
  Guard page = setup.bm->fix(setup.root, nullptr);
  std::uint32_t line = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(*page.read(line * 64, 8));
    if (++line == kLinesPerPage) {
      state.PauseTiming();
      page.release();
      setup.bm->flush_all();
      page = setup.bm->fix(setup.root, nullptr);
      line = 1;
      state.ResumeTiming();
    }
  }
  state.counters["nvm_lines_read"] = static_cast<double>(setup.bm->counters().nvm_lines_read);
}
BENCHMARK(BM_LoadLineFromNvm)->Arg(0)->Arg(500);

}  // namespace
}  // namespace tristore

BENCHMARK_MAIN();
