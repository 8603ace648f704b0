// SharedSpinLatch (common/shared_spin_latch.hpp): the latch word main-memory and nvm-direct keep
// per page. Exclusive holds move its version and shared ones do not, so a reader that
// validates against the version never accepts a half-made change, and writes nothing.
#include <emmintrin.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/shared_spin_latch.hpp"

namespace tristore {
namespace {

TEST(SharedSpinLatch, ExclusiveHoldsMoveTheVersionSharedHoldsDoNot) {
  std::uint64_t word = 0;
  SharedSpinLatch latch(word);
  const std::uint64_t before = latch.optimistic_version();
  latch.lock_shared();
  latch.lock_shared();
  EXPECT_TRUE(latch.unchanged_since(before)) << "shared holders are left out";
  EXPECT_EQ(latch.optimistic_version(), before);
  latch.unlock_shared();
  latch.unlock_shared();
  EXPECT_EQ(word, before) << "nothing left behind";
  latch.lock();
  EXPECT_FALSE(latch.unchanged_since(before)) << "a change under way";
  latch.unlock();
  EXPECT_FALSE(latch.unchanged_since(before)) << "a change made";
  const std::uint64_t after = latch.optimistic_version();
  EXPECT_EQ(after, before + 1);
  EXPECT_TRUE(latch.unchanged_since(after));
}

TEST(SharedSpinLatch, TheVersionWrapsWithinItsBitsAndLeavesTheLatchBitsAlone) {
  std::uint64_t word = SharedSpinLatch::kVersionMask;
  SharedSpinLatch latch(word);
  latch.lock();
  EXPECT_EQ(word, SharedSpinLatch::kExclusive | SharedSpinLatch::kVersionMask);
  latch.unlock();
  EXPECT_EQ(word, 0u);
  latch.lock_shared();
  EXPECT_EQ(word, SharedSpinLatch::kShared);
  latch.unlock_shared();
  EXPECT_EQ(word, 0u);
}

// A waiter for exclusive keeps new shared holders out: readers that come one after another
// would otherwise keep the count above zero, and the waiter waiting for as long as they go on.
// The waiter's bit is up before the second reader starts, so the waiter is in before it.
TEST(SharedSpinLatch, AWaiterForExclusiveKeepsNewSharedHoldersOut) {
  std::uint64_t word = 0;
  SharedSpinLatch latch(word);
  latch.lock_shared();
  std::atomic<int> entered{0};
  int writer_entered = 0, reader_entered = 0;
  std::thread writer([&] {
    SharedSpinLatch mine(word);
    mine.lock();
    writer_entered = ++entered;
    mine.unlock();
  });
  while ((std::atomic_ref<std::uint64_t>(word).load() & SharedSpinLatch::kExclusiveWaiting) == 0)
    std::this_thread::yield();
  std::thread reader([&] {
    SharedSpinLatch mine(word);
    mine.lock_shared();
    reader_entered = ++entered;
    mine.unlock_shared();
  });
  for (int i = 0; i < 1000; ++i) std::this_thread::yield();  // time for a reader to slip in
  EXPECT_EQ(entered.load(), 0) << "the first reader still holds the latch";
  latch.unlock_shared();
  writer.join();
  reader.join();
  EXPECT_EQ(writer_entered, 1);
  EXPECT_EQ(reader_entered, 2) << "the second reader came in before the waiting writer";
  EXPECT_EQ(word, 1u) << "one exclusive hold, no bit left";
}

// Two writers set a pair of words to the same new value under the exclusive latch; two readers
// read the pair optimistically and one under the shared latch. A read that validates, or one
// under the shared latch, never sees the two words differ, and never goes back. Five threads
// on two cores.
TEST(SharedSpinLatch, ReadsThatValidateNeverSeeAHalfMadeChange) {
  struct alignas(64) Guarded {
    std::uint64_t first = 0;
    std::uint64_t second = 0;
  } guarded;
  std::uint64_t word = 0;
  constexpr std::uint64_t kChanges = 20000;
  std::atomic<std::uint64_t> next{1};
  std::atomic<bool> done{false};
  std::atomic<int> started{0};
  auto start_together = [&] {  // all at once, not one after another
    started.fetch_add(1);
    while (started.load() < 5) std::this_thread::yield();
  };
  auto load = [](std::uint64_t& value) {
    return std::atomic_ref<std::uint64_t>(value).load(std::memory_order_relaxed);
  };
  auto store = [](std::uint64_t& value, std::uint64_t to) {
    std::atomic_ref<std::uint64_t>(value).store(to, std::memory_order_relaxed);
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w)
    threads.emplace_back([&] {
      SharedSpinLatch latch(word);
      start_together();
      for (;;) {
        const std::uint64_t value = next.fetch_add(1);
        if (value > kChanges) break;
        latch.lock();
        // Larger values only: the pair never goes back.
        if (load(guarded.first) < value) {
          store(guarded.first, value);
          for (int pause = 0; pause < 32; ++pause) _mm_pause();  // a reader may look now
          store(guarded.second, value);
        }
        latch.unlock();
      }
    });
  std::atomic<std::uint64_t> validated{0}, spoilt{0}, torn_accepted{0}, went_back{0};
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&] {
      const SharedSpinLatch latch(word);
      start_together();
      std::uint64_t last = 0;
      while (!done.load()) {
        const std::uint64_t version = latch.optimistic_version();
        const std::uint64_t first = load(guarded.first);
        for (int pause = 0; pause < 32; ++pause) _mm_pause();  // a writer may come now
        const std::uint64_t second = load(guarded.second);
        if (!latch.unchanged_since(version)) {
          spoilt.fetch_add(1);
          continue;
        }
        validated.fetch_add(1);
        if (first != second) torn_accepted.fetch_add(1);
        if (first < last) went_back.fetch_add(1);
        last = first;
      }
    });
  std::atomic<std::uint64_t> shared_torn{0};
  threads.emplace_back([&] {
    SharedSpinLatch latch(word);
    start_together();
    while (!done.load()) {
      latch.lock_shared();
      if (load(guarded.first) != load(guarded.second)) shared_torn.fetch_add(1);
      latch.unlock_shared();
    }
  });
  threads[0].join();
  threads[1].join();
  done = true;
  for (std::size_t t = 2; t < threads.size(); ++t) threads[t].join();
  std::printf("validated %llu, spoilt %llu\n", static_cast<unsigned long long>(validated.load()),
              static_cast<unsigned long long>(spoilt.load()));
  EXPECT_EQ(torn_accepted.load(), 0u);
  EXPECT_EQ(went_back.load(), 0u);
  EXPECT_EQ(shared_torn.load(), 0u);
  EXPECT_GT(validated.load(), 0u);
  EXPECT_EQ(guarded.first, kChanges);
  EXPECT_EQ(guarded.second, kChanges);
  EXPECT_EQ(word, kChanges) << "one version step per exclusive hold, no latch bit left";
}

}  // namespace
}  // namespace tristore
