// The B-tree over the buffer manager with a pool of a few frames: splits, merges, root
// changes and scans while parts of the tree are swizzled in DRAM, on mini pages, in NVM or on
// SSD, for every buffer-managed configuration. TRISTORE_SEED=N replays a run.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "btree/btree.hpp"
#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/frame_pool.hpp"

using namespace tristore;

namespace {

std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("TRISTORE_SEED");
    std::uint64_t s = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    std::printf("seed %llu (replay with TRISTORE_SEED=%llu)\n", static_cast<unsigned long long>(s),
                static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

using Value = std::array<std::uint64_t, 12>;  // 96 bytes: 160 entries per leaf
using Tree = BTree<std::uint64_t, Value, BufferManager>;

Value value_for(std::uint64_t key, std::uint64_t version) {
  Value v;
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = key * 1000 + version + i;
  return v;
}

struct Configuration {
  const char* name;
  bool nvm, ssd, cache_line_grained, mini_pages, swizzling;
};

const Configuration kConfigurations[] = {
    {"three_tier", true, true, true, true, true},
    {"no_cl_grained", true, true, false, true, true},
    {"no_mini_pages", true, true, true, false, true},
    {"no_swizzling", true, true, true, true, false},
    {"basic_nvm", true, false, false, false, false},
    {"ssd_bm", false, true, false, false, false},
};

class BTreeOverBufferManager : public ::testing::TestWithParam<Configuration> {};

}  // namespace

TEST_P(BTreeOverBufferManager, RandomOperationsWithAFewFramesMatchStdMap) {
  const Configuration& c = GetParam();
  const std::uint64_t seed = test_seed();
  SCOPED_TRACE(std::string(c.name) + " seed " + std::to_string(seed));
  // 6 frames of DRAM, 24 NVM slots (basic-nvm: every page), the rest on SSD.
  tristore::testing::TestTiers tiers(c.name, c.nvm ? (c.ssd ? 24 : 400) : 0, c.ssd ? 2000 : 0);
  BufferManagerOptions options;
  options.dram_bytes = 6 * FramePool::kSlabBytes;
  options.nvm = tiers.nvm.get();
  options.ssd = tiers.ssd.get();
  options.cache_line_grained = c.cache_line_grained;
  options.mini_pages = c.mini_pages;
  options.swizzling = c.swizzling;
  BufferManager manager(options);
  Swip root = Tree::create(manager);
  Tree tree(manager, root);

  std::mt19937_64 rng(seed);
  std::map<std::uint64_t, Value> model;
  const std::uint64_t key_range = 12000;
  for (std::uint64_t op = 0; op < 11000; ++op) {
    const std::uint64_t k = rng() % key_range;
    const unsigned kind = op < 5000 ? 0 : rng() % 8;  // grow first, then mix
    if (kind <= 2) {
      Value v = value_for(k, op);
      ASSERT_EQ(tree.insert(k, v), model.emplace(k, v).second) << "insert op " << op;
    } else if (kind <= 4) {
      ASSERT_EQ(tree.remove(k), model.erase(k) == 1) << "remove op " << op;
    } else if (kind == 5) {
      std::uint64_t word = op;
      auto it = model.find(k);
      ASSERT_EQ(tree.update_part(k, 8 * (op % 12), 8, &word), it != model.end());
      if (it != model.end()) it->second[op % 12] = word;
    } else if (kind == 6) {
      auto it = model.lower_bound(k);
      std::size_t n = tree.scan(k, 30, [&](std::uint64_t key, const Value& v) {
        EXPECT_TRUE(it != model.end() && key == it->first && v == it->second) << "op " << op;
        ++it;
        return true;
      });
      ASSERT_EQ(n, std::min<std::size_t>(30, std::distance(model.lower_bound(k), model.end())));
    } else {
      Value v{};
      auto it = model.find(k);
      ASSERT_EQ(tree.lookup(k, v), it != model.end()) << "lookup op " << op;
      if (it != model.end()) {
        ASSERT_TRUE(v == it->second) << "value op " << op;
      }
    }
    if (op % 4000 == 0) {
      ASSERT_EQ(tree.validate(), "") << "op " << op;
    }
  }
  ASSERT_EQ(tree.validate(), "");
  EXPECT_EQ(tree.stats().entries, model.size());
  EXPECT_GE(tree.stats().leaves, 30u) << "the tree must be far larger than the pool";

  // Drain through merges down to one leaf.
  for (auto& [k, v] : model) ASSERT_TRUE(tree.remove(k));
  EXPECT_EQ(tree.validate(), "");
  EXPECT_EQ(tree.stats().entries, 0u);

  Counters counters = manager.counters();
  EXPECT_GT(counters.dram_evictions, 0u);
  if (c.ssd) {
    EXPECT_GT(counters.ssd_pages_read, 0u);
    EXPECT_GT(counters.ssd_pages_written, 0u);
  }
  if (c.nvm) {
    EXPECT_GT(counters.nvm_lines_read, 0u);
    EXPECT_GT(counters.nvm_lines_written, 0u);
  }
  if (c.swizzling) {
    EXPECT_GT(counters.swizzled_hits, 0u);
  }
  if (c.mini_pages && c.cache_line_grained) {
    EXPECT_GT(counters.mini_pages_created, 0u);
    EXPECT_GT(counters.mini_page_promotions, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(All, BTreeOverBufferManager, ::testing::ValuesIn(kConfigurations),
                         [](const ::testing::TestParamInfo<Configuration>& info) {
                           return std::string(info.param.name);
                         });
