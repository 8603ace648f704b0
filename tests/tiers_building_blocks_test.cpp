// The buffer manager's building blocks: line masks, frames, the page-id hash map, the admission
// set, the frame pool's budget.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>

#include "common/error.hpp"
#include "tests/test_support.hpp"
#include "tiers/admission_set.hpp"
#include "tiers/frame.hpp"
#include "tiers/frame_pool.hpp"
#include "tiers/line_mask.hpp"
#include "tiers/page_id_map.hpp"

namespace tristore {
namespace {

using testing_support::test_seed;

TEST(TiersLineMask, RangesAcrossWordBoundaries) {
  LineMask mask;
  EXPECT_TRUE(mask.none());
  mask.set(60, 70);
  EXPECT_TRUE(mask.all(60, 70));
  EXPECT_FALSE(mask.all(59, 70));
  EXPECT_FALSE(mask.all(60, 71));
  EXPECT_TRUE(mask.test(64));
  EXPECT_FALSE(mask.test(71));
  EXPECT_EQ(mask.count(), 11u);
  EXPECT_EQ(mask.count_clear(50, 80), 20u);
  EXPECT_EQ(mask.next_set(0), 60u);
  EXPECT_EQ(mask.next_clear(60), 71u);
  mask.set(255);
  EXPECT_EQ(mask.next_set(71), 255u);
  EXPECT_EQ(mask.next_clear(255), kLinesPerPage);
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  mask.for_each_run([&](std::size_t first, std::size_t count) { runs.emplace_back(first, count); });
  EXPECT_EQ(runs, (std::vector<std::pair<std::size_t, std::size_t>>{{60, 11}, {255, 1}}));
  mask.set(0, 255);
  EXPECT_TRUE(mask.full());
}

TEST(TiersLineMask, MatchesABoolArrayOnRandomRanges) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 random(seed);
  LineMask mask;
  std::array<bool, kLinesPerPage> model{};
  for (int step = 0; step < 2000; ++step) {
    std::size_t a = random() % kLinesPerPage, b = random() % kLinesPerPage;
    if (a > b) std::swap(a, b);
    if (random() % 4 == 0) {
      mask.set(a, b);
      for (std::size_t i = a; i <= b; ++i) model[i] = true;
    }
    bool all = true;
    std::size_t clear = 0;
    for (std::size_t i = a; i <= b; ++i) {
      all = all && model[i];
      clear += model[i] ? 0 : 1;
    }
    ASSERT_EQ(mask.all(a, b), all);
    ASSERT_EQ(mask.count_clear(a, b), clear);
  }
}

// Guards skip the resident mask only on a full frame whose every line is resident.
TEST(TiersFrames, OnlyAFullFrameWithEveryLineResidentIsReadWhole) {
  auto full = std::make_unique<FullFrame>();
  EXPECT_EQ(data_if_whole(&full->header), nullptr);
  full->resident.set(0, kLinesPerPage - 2);  // all but the last line
  EXPECT_EQ(data_if_whole(&full->header), nullptr);
  EXPECT_FALSE(full->is_resident(kLinesPerPage - 1, kLinesPerPage - 1));
  full->mark_all_resident();
  EXPECT_EQ(data_if_whole(&full->header), full->data);
  EXPECT_TRUE(full->is_resident(0, kLinesPerPage - 1));

  auto mini = std::make_unique<MiniPage>();
  mini->header.set(frame_flag::kMini);
  for (std::size_t slot = 0; slot < MiniPage::kSlots; ++slot) mini->set_line_at(slot, slot);
  mini->set_count(MiniPage::kSlots);
  EXPECT_EQ(data_if_whole(&mini->header), nullptr);
}

// The frame latch's waiter for exclusive keeps new shared holders out (as SharedSpinLatch's):
// its bit is up before the second reader starts, so the waiter is in before it.
TEST(TiersFrames, AWaiterForTheExclusiveLatchKeepsNewSharedHoldersOut) {
  auto full = std::make_unique<FullFrame>();
  FrameHeader& frame = full->header;
  frame.latch_shared();
  std::atomic<int> entered{0};
  int writer_entered = 0, reader_entered = 0;
  std::thread writer([&] {
    frame.latch_exclusive();
    writer_entered = ++entered;
    frame.bump_version();
    frame.unlatch_exclusive();
  });
  while ((frame.version.load() & FrameHeader::kLatchExclusiveWaiting) == 0)
    std::this_thread::yield();
  std::thread reader([&] {
    frame.latch_shared();
    reader_entered = ++entered;
    frame.unlatch_shared();
  });
  for (int i = 0; i < 1000; ++i) std::this_thread::yield();  // time for a reader to slip in
  EXPECT_EQ(entered.load(), 0) << "the first reader still holds the latch";
  frame.unlatch_shared();
  writer.join();
  reader.join();
  EXPECT_EQ(writer_entered, 1);
  EXPECT_EQ(reader_entered, 2) << "the second reader came in before the waiting writer";
  EXPECT_EQ(frame.version.load(), 1u) << "one change, no latch bit left";
}

TEST(TiersPageIdMap, MatchesUnorderedMapUnderRandomInsertEraseUpToItsBound) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 random(seed);
  PageIdMap<std::uint64_t> map(3000);  // every key below: full at times
  const std::size_t bytes = map.memory_bytes();
  std::unordered_map<PageId, std::uint64_t> model;
  for (int step = 0; step < 50000; ++step) {
    const PageId key = random() % 3000;
    switch (random() % 3) {
      case 0:
        map.insert_or_assign(key, step);
        model[key] = static_cast<std::uint64_t>(step);
        break;
      case 1:
        ASSERT_EQ(map.erase(key), model.erase(key) == 1);
        break;
      default: {
        const std::uint64_t* found = map.find(key);
        const auto it = model.find(key);
        ASSERT_EQ(found != nullptr, it != model.end()) << "key " << key;
        if (found != nullptr) {
          ASSERT_EQ(*found, it->second);
        }
      }
    }
    ASSERT_EQ(map.size(), model.size());
  }
  std::size_t visited = 0;
  map.for_each([&](PageId key, std::uint64_t value) {
    ++visited;
    EXPECT_EQ(model.at(key), value);
  });
  EXPECT_EQ(visited, model.size());
  EXPECT_EQ(map.memory_bytes(), bytes) << "the table never moves";
}

TEST(TiersPageIdMap, RefusesAnEntryPastItsBoundAndStaysIntact) {
  PageIdMap<std::uint32_t> map(20);
  for (PageId key = 100; key < 120; ++key)
    map.insert_or_assign(key, static_cast<std::uint32_t>(key));
  map.insert_or_assign(105, 7);  // an existing key takes a new value at the bound
  EXPECT_THROW(map.insert_or_assign(999, 1), Error);
  EXPECT_EQ(map.size(), 20u);
  EXPECT_EQ(map.find(999), nullptr);
  ASSERT_NE(map.find(105), nullptr);
  EXPECT_EQ(*map.find(105), 7u);
  ASSERT_TRUE(map.erase(110));
  map.insert_or_assign(999, 1);
  ASSERT_NE(map.find(999), nullptr);
  for (PageId key = 100; key < 120; ++key)
    if (key != 110 && key != 105) {
      EXPECT_EQ(*map.find(key), key);
    }
}

// Readers look up beside the one writer (the page table's readers beside a miss): they may
// miss an entry being moved or pair a key with a moved value, but every value they see is one
// that was stored, and once the writer stops they see what it sees.
TEST(TiersPageIdMap, RacingReadersSeeOnlyStoredValues) {
  const std::uint64_t seed = test_seed();
  constexpr PageId kKeys = 512;
  PageIdMap<std::uint64_t> map(kKeys);
  const auto value_of = [](PageId key, std::uint64_t round) { return (round << 32) | key; };
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> foreign{0};
  auto read = [&] {
    std::mt19937_64 random(seed + 1);
    while (!done.load(std::memory_order_relaxed)) {
      const PageId key = random() % kKeys;
      if (const std::optional<std::uint64_t> value = map.find_racing(key))
        if ((*value & 0xffffffffu) >= kKeys) foreign.fetch_add(1);
    }
  };
  std::thread reader_a(read);
  std::thread reader_b(read);
  std::mt19937_64 random(seed);
  for (std::uint64_t round = 0; round < 200000; ++round) {
    const PageId key = random() % kKeys;
    if (random() % 2 == 0)
      map.insert_or_assign(key, value_of(key, round));
    else
      map.erase(key);
  }
  done = true;
  reader_a.join();
  reader_b.join();
  EXPECT_EQ(foreign.load(), 0u) << "seed " << seed;
  for (PageId key = 0; key < kKeys; ++key) {
    const std::uint64_t* found = map.find(key);
    const std::optional<std::uint64_t> racing = map.find_racing(key);
    ASSERT_EQ(found != nullptr, racing.has_value()) << "key " << key;
    if (found != nullptr) {
      EXPECT_EQ(*found, *racing);
    }
  }
}

TEST(TiersAdmissionSet, AdmitsOnlyRecentlyDeniedPagesAndForgetsTheOldest) {
  AdmissionSet set(3);
  EXPECT_FALSE(set.take(1));  // first eviction: denied
  set.insert(1);
  set.insert(2);
  set.insert(3);
  EXPECT_TRUE(set.take(2));  // second eviction soon after: admitted, and it leaves the set
  EXPECT_FALSE(set.contains(2));
  set.insert(4);
  set.insert(5);  // full (1, 3, 4): 1 is the oldest and goes
  EXPECT_FALSE(set.contains(1));
  EXPECT_TRUE(set.contains(3));
  EXPECT_TRUE(set.contains(4));
  EXPECT_TRUE(set.contains(5));
  EXPECT_EQ(set.size(), 3u);
  set.insert(5);  // already there: no duplicate, no eviction
  EXPECT_TRUE(set.contains(3));
  EXPECT_EQ(set.size(), 3u);
}

TEST(TiersAdmissionSet, ZeroCapacityRemembersNothing) {
  AdmissionSet set(0);
  set.insert(7);
  EXPECT_FALSE(set.take(7));
}

TEST(TiersFramePool, NeverExceedsTheBudgetWithFullFramesAndMiniPages) {
  const std::uint64_t budget = 6 * FramePool::kSlabBytes + 1000;
  FramePool pool(budget);
  EXPECT_EQ(pool.slab_count(), 6u);
  std::vector<FrameHeader*> frames;
  for (int i = 0; i < 3; ++i) frames.push_back(&pool.try_allocate_full()->header);
  for (int i = 0; i < 3 * 15; ++i) {
    MiniPage* mini = pool.try_allocate_mini();
    ASSERT_NE(mini, nullptr) << i;
    EXPECT_TRUE(mini->header.is_mini());
    frames.push_back(&mini->header);
  }
  EXPECT_EQ(pool.try_allocate_mini(), nullptr);
  EXPECT_EQ(pool.try_allocate_full(), nullptr);
  EXPECT_LE(pool.bytes_in_use(), budget);
  // A freed mini slot is reused for a mini page but cannot hold a full frame.
  pool.release(frames.back());
  frames.pop_back();
  EXPECT_EQ(pool.try_allocate_full(), nullptr);
  MiniPage* again = pool.try_allocate_mini();
  ASSERT_NE(again, nullptr);
  frames.push_back(&again->header);
  // Freeing a whole mini slab makes room for a full frame.
  for (int i = 0; i < 15; ++i) {
    pool.release(frames.back());
    frames.pop_back();
  }
  EXPECT_NE(pool.try_allocate_full(), nullptr);
}

TEST(TiersFramePool, RefusesABudgetBelowAFewFrames) {
  EXPECT_THROW(FramePool(3 * FramePool::kSlabBytes), Error);
  EXPECT_THROW(FramePool(0), Error);
}

}  // namespace
}  // namespace tristore
