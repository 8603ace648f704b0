// ResidentWrites (tiers/resident_writes.hpp): leaves read optimistically beside changes. A read
// takes the frame's version, reads unlatched, and runs again when a change (under the frame's
// exclusive latch, bumping the version) ran beside it; after a few spoilt tries it reads under
// the shared latch. Spoilt tries are counted. Threads changing a page while others read it
// never let a reader keep bytes from halfway through a change (run under ThreadSanitizer too).
#include "tiers/resident_writes.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <thread>
#include <vector>

#include "common/page_format.hpp"
#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"

namespace tristore {
namespace {

using testing::TestTiers;

BufferManagerOptions three_tier(TestTiers& tiers) {
  BufferManagerOptions options;
  options.dram_bytes = 8 * FramePool::kSlabBytes;
  options.nvm = tiers.nvm.get();
  options.ssd = tiers.ssd.get();
  return options;
}

// A page whose lines are all in a full frame, reached through a swizzled swip, as the leaves
// that changes side by side reach; every byte of its region [kAt, kAt + kBytes) is `fill`.
constexpr std::uint32_t kAt = 1000;
constexpr std::uint32_t kBytes = 1024;
Swip resident_page(BufferManager& bm, std::byte fill) {
  BufferManager::Guard page = bm.allocate_page();
  std::memset(page.write(kAt, kBytes), static_cast<int>(fill), kBytes);
  Swip swip = bm.swip_of(page);
  page = BufferManager::Guard();
  BufferManager::Guard fixed = bm.fix(swip, nullptr);
  fixed.whole_page();
  return swip;
}

// A change beside the reader: the frame's exclusive latch, then the bytes.
void change(ResidentWrites& writes, Swip& swip, std::byte fill) {
  ResidentWrites::Guard page = writes.fix(swip, nullptr);
  writes.latch_leaf(page, true);
  std::memset(page.write(kAt, kBytes), static_cast<int>(fill), kBytes);
}

std::byte first_byte(ResidentWrites::Guard& page) { return *page.read(kAt, 1); }

TEST(ResidentWritesOptimisticReads, AReadThatAChangeRanBesideRunsAgain) {
  TestTiers tiers("optimistic-again", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip swip = resident_page(bm, std::byte{1});
  const Counters before = bm.counters();
  {
    ResidentWrites writes(bm);
    ResidentWrites::Guard page = writes.fix(swip, nullptr);
    int tries = 0;
    const std::byte read = writes.read_leaf(page, [&] {
      const std::byte seen = first_byte(page);
      if (++tries == 1) change(writes, swip, std::byte{2});  // after the read, before its end
      return seen;
    });
    EXPECT_EQ(tries, 2) << "the first try saw the bytes before a change that then ran";
    EXPECT_EQ(read, std::byte{2});
    // A read nothing changed beside is taken at once.
    tries = 0;
    EXPECT_EQ(writes.read_leaf(page, [&] { return ++tries, first_byte(page); }), std::byte{2});
    EXPECT_EQ(tries, 1);
  }
  EXPECT_EQ(bm.counters().leaf_reads_retried - before.leaf_reads_retried, 1u);
}

TEST(ResidentWritesOptimisticReads, AfterItsTriesAReadHoldsTheSharedLatch) {
  TestTiers tiers("optimistic-latched", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip swip = resident_page(bm, std::byte{0});
  const FrameHeader* frame = swip.frame<FrameHeader>();
  const Counters before = bm.counters();
  {
    ResidentWrites writes(bm);
    ResidentWrites::Guard page = writes.fix(swip, nullptr);
    unsigned tries = 0;
    bool latched_at_last = false;
    writes.read_leaf(page, [&] {
      ++tries;
      // Every optimistic try is spoilt by a change beside it; the last one is not optimistic.
      if (tries <= kOptimisticAttempts)
        change(writes, swip, static_cast<std::byte>(tries));
      else
        latched_at_last = (frame->version.load() & FrameHeader::kLatchSharedMask) != 0;
      return first_byte(page);
    });
    EXPECT_EQ(tries, kOptimisticAttempts + 1);
    EXPECT_TRUE(latched_at_last) << "the last try reads under the shared latch";
    EXPECT_EQ(first_byte(page), static_cast<std::byte>(kOptimisticAttempts));
  }
  EXPECT_EQ((frame->version.load() & FrameHeader::kLatchSharedMask), 0u)
      << "the guard let its shared latch go";
  EXPECT_EQ(bm.counters().leaf_reads_retried - before.leaf_reads_retried, kOptimisticAttempts);
}

// Writers fill the region with one byte value after another, each under the frame latch;
// readers copy the region optimistically and must always find one value throughout.
TEST(ResidentWritesOptimisticReads, ThreadsNeverReadHalfAChange) {
  TestTiers tiers("optimistic-threads", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip swip = resident_page(bm, std::byte{0});
  constexpr int kWriters = 2, kReaders = 4, kChanges = 4000, kReads = 20000;
  std::vector<int> torn(kReaders, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      ResidentWrites writes(bm);
      for (int i = 0; i < kChanges; ++i)
        change(writes, swip, static_cast<std::byte>(1 + (i * kWriters + w) % 250));
    });
  for (int r = 0; r < kReaders; ++r)
    threads.emplace_back([&, r] {
      ResidentWrites writes(bm);
      std::array<std::byte, kBytes> copy;
      for (int i = 0; i < kReads; ++i) {
        ResidentWrites::Guard page = writes.fix(swip, nullptr);
        writes.read_leaf(page, [&] {
          std::memcpy(copy.data(), page.read(kAt, kBytes), kBytes);
          return true;
        });
        for (std::byte b : copy)
          if (b != copy[0]) {
            ++torn[r];
            break;
          }
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < kReaders; ++r) EXPECT_EQ(torn[r], 0) << "reader " << r;
}

}  // namespace
}  // namespace tristore
