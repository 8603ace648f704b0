// The B-tree alone over main-memory page access (no table layer): random inserts, point
// lookups, part updates and 100-entry scans on 1M 8-byte keys with 8-byte values.
//
// BM_lookup_buffer_manager: the same tree over the 3tier buffer manager, every page in DRAM
// (full frames, swizzled swips): the cost of the page-access layer alone, without the engine.
//
//   build-h4-rel/bench/btree_operations_bench
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include <unistd.h>
#include <vector>

#include "btree/btree.hpp"
#include "nvm/nvm_tier.hpp"
#include "ssd/ssd_page_file.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/main_memory_access.hpp"

using namespace tristore;

namespace {

constexpr std::uint64_t kRecords = 1'000'000;
using Tree = BTree<std::uint64_t, std::uint64_t, MainMemoryAccess>;

struct LoadedTree {
  MainMemoryAccess access{1ull << 30};
  Swip root = Tree::create(access);
  Tree tree{access, root};
  LoadedTree() {
    tree.bulk_load(
        kRecords, [](std::size_t i, std::uint64_t& k, std::uint64_t& v) { k = v = i; }, 0.66);
  }
};

LoadedTree& loaded() {
  static LoadedTree tree;
  return tree;
}

std::vector<std::uint64_t> random_keys(std::uint64_t range) {
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> keys(1 << 20);
  for (auto& k : keys) k = rng() % range;
  return keys;
}

void BM_lookup(benchmark::State& state) {
  Tree& tree = loaded().tree;
  auto keys = random_keys(kRecords);
  std::uint64_t v = 0, sum = 0, i = 0;
  for (auto _ : state) {
    tree.lookup(keys[i++ & (keys.size() - 1)], v);
    sum += v;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations());
}

// 3tier files under /dev/shm and a mkdtemp directory, removed at exit.
struct BufferedTree {
  std::string nvm_path = "/dev/shm/tristore-btree-bench-" + std::to_string(::getpid()) + ".nvm";
  std::filesystem::path ssd_dir;
  std::unique_ptr<NvmTier> nvm;
  std::unique_ptr<SsdPageFile> ssd;
  std::unique_ptr<BufferManager> manager;
  Swip root;
  std::unique_ptr<BTree<std::uint64_t, std::uint64_t, BufferManager>> tree;
  BufferedTree() {
    char tmpl[] = "/tmp/tristore-btree-bench-XXXXXX";
    ssd_dir = ::mkdtemp(tmpl);
    NvmTierOptions nvm_options;
    nvm_options.device.path = nvm_path;
    nvm_options.device.size_bytes = 64ull << 20;
    nvm_options.device.create = true;
    nvm_options.log_bytes = 1ull << 20;
    nvm = NvmTier::create(nvm_options);
    SsdOptions ssd_options;
    ssd_options.path = (ssd_dir / "bench.ssd").string();
    ssd_options.size_bytes = 256ull << 20;
    ssd_options.create = true;
    ssd = SsdPageFile::create(ssd_options);
    BufferManagerOptions options;
    options.dram_bytes = 256ull << 20;
    options.nvm = nvm.get();
    options.ssd = ssd.get();
    manager = std::make_unique<BufferManager>(options);
    root = create_empty_tree(*manager);
    tree = std::make_unique<BTree<std::uint64_t, std::uint64_t, BufferManager>>(*manager, root);
    tree->bulk_load(
        kRecords, [](std::size_t i, std::uint64_t& k, std::uint64_t& v) { k = v = i; }, 0.66);
    std::uint64_t v;
    for (std::uint64_t k = 0; k < kRecords; k += 64) tree->lookup(k, v);
  }
  ~BufferedTree() {
    tree.reset();
    manager.reset();
    nvm.reset();
    ssd.reset();
    std::remove(nvm_path.c_str());
    std::filesystem::remove_all(ssd_dir);
  }
};

void BM_lookup_buffer_manager(benchmark::State& state) {
  static BufferedTree buffered;
  auto keys = random_keys(kRecords);
  std::uint64_t v = 0, sum = 0, i = 0;
  for (auto _ : state) {
    buffered.tree->lookup(keys[i++ & (keys.size() - 1)], v);
    sum += v;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations());
}

void BM_update_part(benchmark::State& state) {
  Tree& tree = loaded().tree;
  auto keys = random_keys(kRecords);
  std::uint64_t i = 0;
  for (auto _ : state) {
    std::uint32_t word = static_cast<std::uint32_t>(i);
    tree.update_part(keys[i++ & (keys.size() - 1)], 4, 4, &word);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_scan100(benchmark::State& state) {
  Tree& tree = loaded().tree;
  auto keys = random_keys(kRecords);
  std::uint64_t i = 0, sum = 0;
  for (auto _ : state) {
    tree.scan(keys[i++ & (keys.size() - 1)], 100, [&](std::uint64_t, std::uint64_t v) {
      sum += v;
      return true;
    });
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations());
}

void BM_insert_random(benchmark::State& state) {
  MainMemoryAccess access{1ull << 30};
  Swip root = Tree::create(access);
  Tree tree{access, root};
  std::mt19937_64 rng(11);
  for (auto _ : state) tree.insert(rng(), 1);
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(BM_lookup);
BENCHMARK(BM_lookup_buffer_manager);
BENCHMARK(BM_update_part);
BENCHMARK(BM_scan100);
BENCHMARK(BM_insert_random);

BENCHMARK_MAIN();
