// The B-tree over the buffer manager with a pool of a few frames: splits, merges, root
// changes and scans while parts of the tree are swizzled in DRAM, on mini pages, in NVM or on
// SSD, for every buffer-managed configuration. TRISTORE_SEED=N replays a run.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>

#include "btree/btree.hpp"
#include "tests/model_comparison.hpp"
#include "tests/test_support.hpp"
#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/frame_pool.hpp"

using namespace tristore;
using testing_support::ModelComparison;

namespace {

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
  const std::uint64_t seed = testing_support::test_seed();
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
  ModelComparison<Tree, std::uint64_t, Value> check(tree);
  const std::uint64_t key_range = 12000;
  for (std::uint64_t op = 0; op < 11000; ++op) {
    check.op = op;
    const std::uint64_t k = rng() % key_range;
    const unsigned kind = op < 5000 ? 0 : rng() % 8;  // grow first, then mix
    if (kind <= 2) {
      check.insert(k, value_for(k, op));
    } else if (kind <= 4) {
      check.remove(k);
    } else if (kind == 5) {
      const std::uint64_t word = op;
      check.update_part(k, sizeof(word) * (op % 12), sizeof(word), &word);
    } else if (kind == 6) {
      check.scan(k, 30);
    } else {
      check.lookup(k);
    }
    if (HasFatalFailure()) return;
    if (op % 4000 == 0) {
      ASSERT_EQ(tree.validate(), "") << "op " << op;
    }
  }
  ASSERT_EQ(tree.validate(), "");
  EXPECT_EQ(tree.stats().entries, check.model().size());
  EXPECT_GE(tree.stats().leaves, 30u) << "the tree must be far larger than the pool";

  // Drain through merges down to one leaf.
  check.remove_all();
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
                         tristore::testing::ParamName{});
