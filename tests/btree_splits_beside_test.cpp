// Leaf splits beside changes at the B-tree's level (BTree::insert_splitting_leaf_beside,
// common/structure_version.hpp): threads insert into one main-memory tree side by side through
// MainMemoryWrites, as changes mode runs them, and an insert that needs more (a leaf that is
// the root, a full parent) runs alone through MainMemoryAccess, as under the exclusive latch.
// Lookups run beside them and must find every key whose insert returned. At the end the tree
// must pass validate() (key order, separator bounds, counts, equal leaf depth) and hold every
// key: a split that linked its new leaf in the wrong place, or an insert that went to a leaf
// a split had moved on from, fails one or the other.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <numeric>
#include <random>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "btree/btree.hpp"
#include "common/structure_version.hpp"
#include "test_support.hpp"
#include "tiers/main_memory_access.hpp"
#include "tiers/main_memory_writes.hpp"

namespace tristore {
namespace {

struct Value {
  std::uint64_t words[8];
};
Value value_of(std::uint64_t key) {
  Value value;
  for (std::uint64_t i = 0; i < 8; ++i) value.words[i] = key * 7 + i;
  return value;
}

constexpr unsigned kInserters = 4, kReaders = 2;
constexpr std::uint64_t kKeysPerInserter = 50000;

class BTreeSplitsBesideTest : public ::testing::Test {
 protected:
  BTreeSplitsBesideTest() : memory_(256 << 20), root_(create_empty_tree(memory_)) {}

  // Beside the others (a shared hold), or alone where it needs more.
  void insert(std::uint64_t key) {
    {
      const std::shared_lock beside(mode_);
      MainMemoryWrites writes(memory_);
      BTree<std::uint64_t, Value, MainMemoryWrites> tree(writes, root_, &structure_);
      try {
        ASSERT_TRUE(tree.insert(key, value_of(key))) << "key " << key;
        return;
      } catch (const MainMemoryWrites::RetryExclusively&) {
        ASSERT_TRUE(writes.structure_refused());
      }
    }
    const std::unique_lock alone(mode_);
    BTree<std::uint64_t, Value, MainMemoryAccess> tree(memory_, root_);
    ASSERT_TRUE(tree.insert(key, value_of(key))) << "key " << key;
    exclusive_inserts_.fetch_add(1, std::memory_order_relaxed);
  }
  bool lookup(std::uint64_t key, Value& out) {
    const std::shared_lock beside(mode_);
    MainMemoryWrites writes(memory_);
    BTree<std::uint64_t, Value, MainMemoryWrites> tree(writes, root_, &structure_);
    return tree.lookup(key, out);
  }

  MainMemoryAccess memory_;
  Swip root_;
  StructureVersion structure_;
  std::shared_mutex mode_;  // shared: beside the others; exclusive: alone
  std::atomic<std::uint64_t> exclusive_inserts_{0};
};

TEST_F(BTreeSplitsBesideTest, InsertsSplittingLeavesSideBySideLeaveAValidTreeWithEveryKey) {
  const std::uint64_t seed = testing_support::test_seed();
  // Inserter t's keys are t, t + kInserters, ...: the first ascending (each split at the key's
  // place, an append), the others in random order.
  std::vector<std::vector<std::uint64_t>> keys(kInserters);
  std::mt19937_64 shuffle(seed);
  for (unsigned t = 0; t < kInserters; ++t) {
    keys[t].resize(kKeysPerInserter);
    for (std::uint64_t i = 0; i < kKeysPerInserter; ++i) keys[t][i] = i * kInserters + t;
    if (t > 0) std::shuffle(keys[t].begin(), keys[t].end(), shuffle);
  }
  std::vector<std::atomic<std::uint64_t>> inserted(kInserters);  // keys[t][0, inserted[t])
  std::atomic<bool> inserting{true};
  std::atomic<std::uint64_t> lookups{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kInserters; ++t)
    threads.emplace_back([&, t] {
      for (std::uint64_t i = 0; i < kKeysPerInserter; ++i) {
        insert(keys[t][i]);
        inserted[t].store(i + 1, std::memory_order_release);
      }
    });
  for (unsigned r = 0; r < kReaders; ++r)
    threads.emplace_back([&, r] {
      std::mt19937_64 random(seed * 7919 + r);
      while (inserting.load(std::memory_order_acquire)) {
        const unsigned t = random() % kInserters;
        const std::uint64_t done = inserted[t].load(std::memory_order_acquire);
        if (done == 0) continue;
        const std::uint64_t key = keys[t][random() % done];
        Value value{};
        ASSERT_TRUE(lookup(key, value))
            << "key " << key << " inserted, not found (seed " << seed << ")";
        ASSERT_EQ(value.words[7], key * 7 + 7) << "key " << key << " (seed " << seed << ")";
        lookups.fetch_add(1, std::memory_order_relaxed);
      }
    });
  for (unsigned t = 0; t < kInserters; ++t) threads[t].join();
  inserting.store(false, std::memory_order_release);
  for (unsigned r = 0; r < kReaders; ++r) threads[kInserters + r].join();

  BTree<std::uint64_t, Value, MainMemoryAccess> tree(memory_, root_);
  EXPECT_EQ(tree.validate(), "") << "seed " << seed;
  const BTreeStats stats = tree.stats();
  EXPECT_EQ(stats.entries, kInserters * kKeysPerInserter);
  for (std::uint64_t key = 0; key < kInserters * kKeysPerInserter; ++key) {
    Value value{};
    ASSERT_TRUE(tree.lookup(key, value)) << "key " << key << " (seed " << seed << ")";
    ASSERT_EQ(value.words[0], key * 7) << "key " << key;
  }
  const Counters counters = memory_.counters();
  std::printf(
      "%llu leaves, height %u: %llu split beside the inserts, %llu inserts alone, %llu "
      "lookups beside\n",
      static_cast<unsigned long long>(stats.leaves), stats.height,
      static_cast<unsigned long long>(counters.splits_beside),
      static_cast<unsigned long long>(exclusive_inserts_.load()),
      static_cast<unsigned long long>(lookups.load()));
  // 200,000 entries of 72 bytes: over a thousand leaves (the root splits alone), nearly all
  // made by splits beside.
  EXPECT_GT(counters.splits_beside, stats.leaves / 2);
}

}  // namespace
}  // namespace tristore
