// ResidentReads (tiers/resident_reads.hpp): reads of what the buffer manager holds in DRAM,
// changing nothing but the referenced bit. It serves swizzled and page-table fixes of DRAM
// frames and resident lines of full frames and mini pages, with the bytes the buffer manager
// would return; everything that would load, swizzle or promote throws NotResident and leaves
// the buffer as it was; its fixes are counted; the changing calls are refused.
#include "tiers/resident_reads.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>
#include <vector>

#include "btree/page_access.hpp"
#include "common/page_format.hpp"
#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"

namespace tristore {
namespace {

static_assert(PageAccess<ResidentReads>);

using Guard = BufferManager::Guard;
using testing::TestTiers;

BufferManagerOptions three_tier(TestTiers& tiers, bool swizzling = true) {
  BufferManagerOptions options;
  options.dram_bytes = 8 * FramePool::kSlabBytes;
  options.nvm = tiers.nvm.get();
  options.ssd = tiers.ssd.get();
  options.swizzling = swizzling;
  return options;
}

std::byte pattern(std::size_t i) { return std::byte(i * 13 + 5); }

// One page of pattern bytes, flushed to NVM: the next fix loads it into a mini page.
Swip page_in_nvm(BufferManager& bm) {
  Guard page = bm.allocate_page();
  std::byte* bytes = page.whole_page();
  for (std::size_t i = kPageHeaderSize; i < kPageSize; ++i) bytes[i] = pattern(i);
  page.mark_dirty(kPageHeaderSize, kPageSize - kPageHeaderSize);
  Swip swip = bm.swip_of(page);
  page.release();
  bm.flush_all();
  return swip;
}

TEST(TiersResidentReads, ReadsOnlyWhatIsInDramAndChangesNothingWhenItIsNot) {
  TestTiers tiers("resident", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip root = page_in_nvm(bm);
  {
    ResidentReads reads(bm);
    EXPECT_THROW(reads.fix(root, nullptr), ResidentReads::NotResident) << "only in NVM";
  }
  EXPECT_FALSE(root.is_swizzled());
  EXPECT_EQ(bm.location(root.page_id()), BufferManager::Location::kNvm);

  // Lines 3 and 4 in a mini page; line 5 not.
  Guard page = bm.fix(root, nullptr);
  ASSERT_TRUE(page.on_mini_page());
  page.read(3 * 64, 128);
  const std::uint64_t lines_read = bm.counters().nvm_lines_read;
  const Counters before = bm.counters();
  {
    ResidentReads reads(bm);
    ResidentReads::Guard resident = reads.fix(root, nullptr);
    const std::byte* bytes = resident.read(3 * 64 + 10, 100);
    for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(bytes[i], pattern(3 * 64 + 10 + i));
    EXPECT_THROW(resident.read(4 * 64 + 60, 8), ResidentReads::NotResident) << "line 5 is not";
    EXPECT_THROW(resident.whole_page(), ResidentReads::NotResident) << "would promote";
  }
  EXPECT_EQ(bm.counters().nvm_lines_read, lines_read) << "nothing loaded";
  EXPECT_TRUE(page.on_mini_page()) << "nothing promoted";
  EXPECT_EQ(bm.counters().swizzled_hits - before.swizzled_hits, 1u) << "counted per thread";

  // Promoted: the full frame's resident lines, through the forwarding mini page.
  page.whole_page();
  ASSERT_FALSE(page.on_mini_page());
  page.release();
  ResidentReads reads(bm);
  ResidentReads::Guard resident = reads.fix(root, nullptr);
  EXPECT_EQ(*resident.read(9000, 1), pattern(9000));
  EXPECT_EQ(resident.whole_page()[kPageSize - 1], pattern(kPageSize - 1));
}

TEST(TiersResidentReads, FindsUnswizzledPagesInThePageTableAndCountsTheLookup) {
  TestTiers tiers("resident-table", 16, 64);
  BufferManager bm(three_tier(tiers, /*swizzling=*/false));
  Swip root = page_in_nvm(bm);
  Guard page = bm.fix(root, nullptr);
  page.whole_page();
  page.release();
  ASSERT_FALSE(root.is_swizzled());
  const Counters before = bm.counters();
  {
    ResidentReads reads(bm);
    EXPECT_EQ(*reads.fix(root, nullptr).read(777, 1), pattern(777));
  }
  EXPECT_EQ(bm.counters().page_table_lookups - before.page_table_lookups, 1u);
}

// With swizzling on, a page in DRAM behind an unswizzled swip goes to the buffer manager once,
// which swizzles the swip; then the reads follow the pointer.
TEST(TiersResidentReads, LeavesASwipTheBufferManagerWouldSwizzleToIt) {
  TestTiers tiers("resident-swizzle", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip root = page_in_nvm(bm);
  { bm.fix_page(root.page_id()).whole_page(); }  // in DRAM, not swizzled
  ASSERT_FALSE(root.is_swizzled());
  {
    ResidentReads reads(bm);
    EXPECT_THROW(reads.fix(root, nullptr), ResidentReads::NotResident);
  }
  { Guard page = bm.fix(root, nullptr); }
  ASSERT_TRUE(root.is_swizzled());
  const Counters before = bm.counters();
  {
    ResidentReads reads(bm);
    EXPECT_EQ(*reads.fix(root, nullptr).read(4321, 1), pattern(4321));
  }
  EXPECT_EQ(bm.counters().swizzled_hits - before.swizzled_hits, 1u);
  EXPECT_EQ(bm.counters().page_table_lookups, before.page_table_lookups);
}

TEST(TiersResidentReads, ChangingCallsAreRefused) {
  TestTiers tiers("resident-refused", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip root = page_in_nvm(bm);
  Guard page = bm.fix(root, nullptr);
  page.whole_page();
  ResidentReads reads(bm);
  ResidentReads::Guard resident = reads.fix(root, nullptr);
  EXPECT_THROW(resident.write(100, 1), std::logic_error);
  EXPECT_THROW(reads.allocate_page(), std::logic_error);
  EXPECT_THROW(reads.free_page(std::move(resident)), std::logic_error);
}

// Threads reading one resident page at once, each counting its fixes in its own slot: the
// total is exact (run under ThreadSanitizer too).
TEST(TiersResidentReads, ThreadsReadSideBySideAndEveryFixIsCounted) {
  TestTiers tiers("resident-threads", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip root = page_in_nvm(bm);
  {
    Guard page = bm.fix(root, nullptr);
    page.whole_page();
  }
  ASSERT_TRUE(root.is_swizzled());
  const Counters before = bm.counters();
  constexpr int kThreads = 4, kReads = 20000;
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kReads; ++i) {
        ResidentReads reads(bm);
        const std::size_t at = kPageHeaderSize + (i * 97 + t) % (kPageSize - kPageHeaderSize);
        wrong[t] +=
            *reads.fix(root, nullptr).read(static_cast<std::uint32_t>(at), 1) != pattern(at);
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
  EXPECT_EQ(bm.counters().swizzled_hits - before.swizzled_hits, std::uint64_t{kThreads} * kReads);
}

}  // namespace
}  // namespace tristore
