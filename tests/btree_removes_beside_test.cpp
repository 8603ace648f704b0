// Removes beside changes at the B-tree's level (BTree::remove_without_merge): a remove that
// leaves its leaf under a quarter full runs beside the others unless the exclusive remove would
// merge the leaf (leaf_merge_would_fit), and runs alone only then. Changes beside go through
// MainMemoryWrites, as changes mode runs them; what they refuse runs through MainMemoryAccess,
// as under the exclusive latch.
//  - One thread: the same random inserts and removes, beside-first on one tree and all alone on
//    another, leave trees of the same shape (the look decides exactly as the merge would).
//  - A queue drained from its head between full leaves runs one remove alone per leaf it
//    empties, where refusing every remove under a quarter full ran a quarter of each leaf's.
//  - Threads, each a queue of its own in one tree, beside lookups: a valid tree holding
//    exactly what is left, and still about one remove alone per leaf emptied.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <random>
#include <shared_mutex>
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
using AloneTree = BTree<std::uint64_t, Value, MainMemoryAccess>;
using BesideTree = BTree<std::uint64_t, Value, MainMemoryWrites>;
constexpr std::uint64_t kLeafCapacity = AloneTree::kLeafCapacity;

// One tree, changed beside-first (a shared hold) and alone (an exclusive one) where refused.
class TreeBesideFirst {
 public:
  TreeBesideFirst() : memory_(256 << 20), root_(create_empty_tree(memory_)) {}

  bool insert(std::uint64_t key) {
    return change([&](auto& tree) { return tree.insert(key, value_of(key)); });
  }
  bool remove(std::uint64_t key) {
    return change([&](auto& tree) { return tree.remove(key); }, &removes_alone_);
  }
  bool lookup(std::uint64_t key, Value& out) {
    const std::shared_lock beside(mode_);
    MainMemoryWrites writes(memory_);
    BesideTree tree(writes, root_, &structure_);
    return tree.lookup(key, out);
  }
  AloneTree alone() { return AloneTree(memory_, root_); }
  std::uint64_t removes_alone() const { return removes_alone_.load(); }

 private:
  template <typename Change>
  bool change(Change&& body, std::atomic<std::uint64_t>* alone_count = nullptr) {
    {
      const std::shared_lock beside(mode_);
      MainMemoryWrites writes(memory_);
      BesideTree tree(writes, root_, &structure_);
      try {
        return body(tree);
      } catch (const MainMemoryWrites::RetryExclusively&) {
        EXPECT_TRUE(writes.structure_refused());
      }
    }
    const std::unique_lock alone(mode_);
    AloneTree tree(memory_, root_);
    if (alone_count != nullptr) alone_count->fetch_add(1, std::memory_order_relaxed);
    return body(tree);
  }

  MainMemoryAccess memory_;
  Swip root_;
  StructureVersion structure_;
  std::shared_mutex mode_;
  std::atomic<std::uint64_t> removes_alone_{0};
};

void expect_same_shape(AloneTree& a, AloneTree& b, std::uint64_t seed, std::uint64_t step) {
  const BTreeStats x = a.stats(), y = b.stats();
  ASSERT_EQ(x.height, y.height) << "step " << step << " (seed " << seed << ")";
  ASSERT_EQ(x.inner_nodes, y.inner_nodes) << "step " << step << " (seed " << seed << ")";
  ASSERT_EQ(x.leaves, y.leaves) << "step " << step << " (seed " << seed << ")";
  ASSERT_EQ(x.entries, y.entries) << "step " << step << " (seed " << seed << ")";
  ASSERT_EQ(x.min_leaf_entries, y.min_leaf_entries) << "step " << step << " (seed " << seed << ")";
  ASSERT_EQ(x.max_leaf_entries, y.max_leaf_entries) << "step " << step << " (seed " << seed << ")";
}

TEST(BTreeRemovesBesideTest, RemovesBesideFirstLeaveTheShapeRemovesAloneLeave) {
  const std::uint64_t seed = testing_support::test_seed();
  std::mt19937_64 random(seed);
  TreeBesideFirst beside;
  MainMemoryAccess memory(256 << 20);
  Swip root = create_empty_tree(memory);
  AloneTree alone(memory, root);
  // Two levels (the root's children are leaves: removes beside merge no inner node, which the
  // removes alone do on their way down). Grow to ~20,000 keys, then drain to a few hundred,
  // (never below two leaves), removes in random order, so that leaves fall under a quarter
  // with neighbours of every size.
  constexpr std::uint64_t kKeys = 24000;
  std::vector<std::uint64_t> present;
  std::uint64_t merges_seen = 0;
  for (std::uint64_t step = 0; step < 60000; ++step) {
    const unsigned insert_percent = step < 30000 ? 85 : present.size() > 500 ? 15 : 70;
    if (present.empty() || random() % 100 < insert_percent) {
      const std::uint64_t key = random() % kKeys;
      const bool inserted = alone.insert(key, value_of(key));
      ASSERT_EQ(beside.insert(key), inserted) << "key " << key << " (seed " << seed << ")";
      if (inserted) present.push_back(key);
    } else {
      const std::size_t at = random() % present.size();
      const std::uint64_t key = present[at];
      present[at] = present.back();
      present.pop_back();
      const std::uint64_t leaves_before = alone.stats().leaves;
      ASSERT_TRUE(beside.remove(key)) << "key " << key << " (seed " << seed << ")";
      ASSERT_TRUE(alone.remove(key)) << "key " << key;
      if (alone.stats().leaves < leaves_before) ++merges_seen;
    }
    if (step % 1000 == 999) {
      AloneTree beside_tree = beside.alone();
      expect_same_shape(beside_tree, alone, seed, step);
      ASSERT_EQ(beside_tree.stats().height, 2u) << "the test keeps two levels";
    }
  }
  AloneTree beside_tree = beside.alone();
  EXPECT_EQ(beside_tree.validate(), "") << "seed " << seed;
  expect_same_shape(beside_tree, alone, seed, 60000);
  // Every merge was one refused remove, and nothing else was refused.
  EXPECT_EQ(beside.removes_alone(), merges_seen) << "seed " << seed;
  EXPECT_GT(merges_seen, 20u) << "the drain merged leaves";
}

TEST(BTreeRemovesBesideTest, AQueueDrainedFromItsHeadRunsOneRemoveAlonePerLeafItEmpties) {
  TreeBesideFirst queue;
  // Appended keys fill their leaves (a split at the key's place), so the head leaf's right
  // neighbour is full: a head leaf under a quarter full merges with nothing until it is empty.
  constexpr std::uint64_t kStart = 20000, kRounds = 40000;
  for (std::uint64_t key = 0; key < kStart; ++key) ASSERT_TRUE(queue.insert(key));
  for (std::uint64_t i = 0; i < kRounds; ++i) {
    ASSERT_TRUE(queue.remove(i)) << "head " << i;
    ASSERT_TRUE(queue.insert(kStart + i)) << "tail " << kStart + i;
  }
  AloneTree tree = queue.alone();
  EXPECT_EQ(tree.validate(), "");
  const BTreeStats stats = tree.stats();
  EXPECT_EQ(stats.entries, kStart);
  const std::uint64_t emptied = kRounds / kLeafCapacity;
  std::printf("%llu removes alone for about %llu leaves emptied; %llu leaves now\n",
              static_cast<unsigned long long>(queue.removes_alone()),
              static_cast<unsigned long long>(emptied),
              static_cast<unsigned long long>(stats.leaves));
  // Refusing every remove under a quarter full ran kLeafCapacity / 4 per leaf (~56 here).
  EXPECT_LE(queue.removes_alone(), emptied + 2);
  EXPECT_GE(queue.removes_alone(), emptied - 2);
  // The emptied leaves merged away: the queue's keys in about as many leaves as they fill.
  EXPECT_LE(stats.leaves, kStart / kLeafCapacity + 3);
}

TEST(BTreeRemovesBesideTest, QueuesOfThreadsSideBySideKeepEveryKeyLeftAndMergeTheirHeads) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr unsigned kQueues = 4, kReaders = 2;
  constexpr std::uint64_t kStart = 4000, kRounds = 20000, kSpan = 1'000'000'000;
  TreeBesideFirst tree;
  // Queue q's keys are q * kSpan + i; its head and tail, for the readers.
  std::vector<std::atomic<std::uint64_t>> head(kQueues), tail(kQueues);
  for (unsigned q = 0; q < kQueues; ++q) {
    for (std::uint64_t i = 0; i < kStart; ++i) ASSERT_TRUE(tree.insert(q * kSpan + i));
    tail[q].store(kStart);
  }
  std::atomic<bool> draining{true};
  std::atomic<std::uint64_t> lookups{0};
  std::vector<std::thread> threads;
  for (unsigned q = 0; q < kQueues; ++q)
    threads.emplace_back([&, q] {
      std::mt19937_64 random(seed + q);
      for (std::uint64_t i = 0; i < kRounds; ++i) {
        // Mostly one for one, in bursts either way, as TPC-C's deliveries and new orders.
        if (random() % 2 == 0 || head[q].load() + 10 >= tail[q].load()) {
          ASSERT_TRUE(tree.insert(q * kSpan + tail[q].load())) << "seed " << seed;
          tail[q].fetch_add(1);
        } else {
          const std::uint64_t key = q * kSpan + head[q].load();
          head[q].fetch_add(1);
          ASSERT_TRUE(tree.remove(key)) << "key " << key << " (seed " << seed << ")";
        }
      }
    });
  for (unsigned r = 0; r < kReaders; ++r)
    threads.emplace_back([&, r] {
      std::mt19937_64 random(seed * 7919 + r);
      while (draining.load()) {
        const unsigned q = random() % kQueues;
        const std::uint64_t from = head[q].load() + 1, to = tail[q].load();
        if (from + 1 >= to) continue;
        const std::uint64_t key = q * kSpan + from + random() % (to - from - 1);
        Value value{};
        // Found unless its remove began before the lookup ended: the head, read after it,
        // has not passed the key.
        const bool found = tree.lookup(key, value);
        if (head[q].load() <= key - q * kSpan) {
          ASSERT_TRUE(found) << "key " << key << " (seed " << seed << ")";
          ASSERT_EQ(value.words[7], key * 7 + 7) << "key " << key;
        }
        lookups.fetch_add(1);
      }
    });
  for (unsigned q = 0; q < kQueues; ++q) threads[q].join();
  draining.store(false);
  for (unsigned r = 0; r < kReaders; ++r) threads[kQueues + r].join();

  AloneTree alone = tree.alone();
  EXPECT_EQ(alone.validate(), "") << "seed " << seed;
  std::uint64_t left = 0, removed = 0;
  for (unsigned q = 0; q < kQueues; ++q) {
    left += tail[q] - head[q];
    removed += head[q];
    Value value{};
    for (std::uint64_t i = 0; i < tail[q]; ++i)
      ASSERT_EQ(alone.lookup(q * kSpan + i, value), i >= head[q])
          << "queue " << q << " key " << i << " (seed " << seed << ")";
  }
  const BTreeStats stats = alone.stats();
  EXPECT_EQ(stats.entries, left);
  std::printf("%llu removes, %llu alone; %llu lookups beside; %llu leaves for %llu keys\n",
              static_cast<unsigned long long>(removed),
              static_cast<unsigned long long>(tree.removes_alone()),
              static_cast<unsigned long long>(lookups.load()),
              static_cast<unsigned long long>(stats.leaves), static_cast<unsigned long long>(left));
  // About one per leaf emptied, and a few where queues share a leaf or a look raced a change;
  // refusing every remove under a quarter full ran a quarter of each leaf's (~56 per leaf).
  EXPECT_LE(tree.removes_alone(), 3 * (removed / kLeafCapacity) + 4 * kQueues) << "seed " << seed;
}

}  // namespace
}  // namespace tristore
