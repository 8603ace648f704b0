// The B-tree alone over main-memory page access (no table layer): random inserts, point
// lookups, part updates and 100-entry scans on 1M 8-byte keys with 8-byte values.
//
//   build-h4-rel/bench/btree_operations_bench
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "btree/btree.hpp"
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
BENCHMARK(BM_update_part);
BENCHMARK(BM_scan100);
BENCHMARK(BM_insert_random);

BENCHMARK_MAIN();
