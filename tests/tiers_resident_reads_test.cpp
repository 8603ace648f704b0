// ResidentReads (tiers/resident_reads.hpp): reads beside each other under the shared
// database latch. What is in DRAM is read with the bytes the buffer manager would return and
// nothing shared written but the referenced bit; misses are served by the buffer manager one at
// a time, and no line a reader may be looking at moves or is reused under it: a mini page
// that needs more lines is replaced by a copy, and frames let go wait for the readers inside
// to leave (tiers/retired_frames.hpp). When none can wait, the read is told to retry
// exclusively. Fixes are counted; the changing calls are refused.
#include "tiers/resident_reads.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "btree/page_access.hpp"
#include "common/page_format.hpp"
#include "common/reader_slots.hpp"
#include "engine/operation_latch.hpp"
#include "tests/test_support.hpp"
#include "tests/tiers_pattern_pages.hpp"
#include "tests/tiers_pattern_readers.hpp"
#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/retired_frames.hpp"

namespace tristore {
namespace {

static_assert(PageAccess<ResidentReads>);

using Guard = BufferManager::Guard;
using testing::pattern;
using testing::TestTiers;

BufferManagerOptions three_tier(TestTiers& tiers, bool swizzling = true, std::size_t slabs = 8) {
  BufferManagerOptions options;
  options.dram_bytes = slabs * FramePool::kSlabBytes;
  options.nvm = tiers.nvm.get();
  options.ssd = tiers.ssd.get();
  options.swizzling = swizzling;
  return options;
}

// Pages of pattern bytes, flushed to NVM: the next fix loads each into a mini page.
std::vector<Swip> pages_in_nvm(BufferManager& bm, std::size_t count) {
  return testing::pattern_pages_written_down(bm, count);
}
Swip page_in_nvm(BufferManager& bm) { return pages_in_nvm(bm, 1)[0]; }

// The reader's side of the database latch, for tests without a database: inside while alive.
struct Inside {
  explicit Inside(ReaderSlots& slots) : slots(slots) { slots.enter(); }
  ~Inside() { slots.leave(); }
  ReaderSlots& slots;
};

TEST(TiersResidentReads, ServesMissesAndNeverMovesALineAReaderHolds) {
  TestTiers tiers("resident", 16, 64);
  BufferManager bm(three_tier(tiers));
  ReaderSlots slots;
  bm.share_with(&slots);
  Swip root = page_in_nvm(bm);
  const PageId page_id = root.page_id();
  const Inside inside(slots);
  ResidentReads reads(bm);
  // The page only in NVM: loaded into a mini page for the reader, its root swip swizzled.
  ResidentReads::Guard page = reads.fix(root, nullptr);
  EXPECT_EQ(bm.location(page_id), BufferManager::Location::kDramMini);
  EXPECT_TRUE(Swip::load(root).is_swizzled());
  const std::byte* lines_3_4 = page.read(3 * 64 + 10, 100);
  for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(lines_3_4[i], pattern(3 * 64 + 10 + i));
  const Counters after_first = bm.counters();
  EXPECT_EQ(after_first.reader_misses, 1u) << "the page, under the miss latch";
  EXPECT_EQ(after_first.reader_appends, 1u) << "its lines, appended beside";

  // Line 1 sorts before 3 and 4 but is appended after them: nothing moves, nothing copied.
  EXPECT_EQ(*page.read(64 + 1, 1), pattern(64 + 1));
  EXPECT_EQ(bm.counters().mini_page_copies, 0u);
  EXPECT_EQ(bm.counters().reader_appends, 2u);
  EXPECT_EQ(bm.counters().nvm_lines_read - after_first.nvm_lines_read, 1u) << "line 1 only";
  // Lines 4 and 5, with 4 here but not followed by 5: sorted into a copy that replaces the
  // mini page; the bytes the reader holds stay where they are, intact.
  const std::byte* lines_4_5 = page.read(4 * 64 + 60, 8);
  for (std::size_t i = 0; i < 8; ++i) ASSERT_EQ(lines_4_5[i], pattern(4 * 64 + 60 + i));
  EXPECT_EQ(bm.counters().mini_page_copies, 1u);
  EXPECT_EQ(bm.counters().reader_misses, 2u) << "a copy: under the miss latch";
  for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(lines_3_4[i], pattern(3 * 64 + 10 + i));
  EXPECT_EQ(bm.counters().nvm_lines_read - after_first.nvm_lines_read, 2u) << "and line 5";

  // The whole page promotes the mini page; the old bytes still stay readable.
  EXPECT_EQ(page.whole_page()[kPageSize - 1], pattern(kPageSize - 1));
  EXPECT_EQ(bm.location(page_id), BufferManager::Location::kDramFull);
  EXPECT_EQ(bm.counters().mini_page_promotions, 1u);
  for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(lines_3_4[i], pattern(3 * 64 + 10 + i));
  // Resident now: no further miss.
  const std::uint64_t misses = bm.counters().reader_misses;
  EXPECT_EQ(*reads.fix(root, nullptr).read(9000, 1), pattern(9000));
  EXPECT_EQ(bm.counters().reader_misses, misses);
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
  EXPECT_EQ(bm.counters().reader_misses, before.reader_misses);
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
    EXPECT_EQ(*reads.fix(root, nullptr).read(4321, 1), pattern(4321));
  }
  ASSERT_TRUE(root.is_swizzled());
  EXPECT_EQ(bm.counters().reader_misses, 1u);
  const Counters before = bm.counters();
  {
    ResidentReads reads(bm);
    EXPECT_EQ(*reads.fix(root, nullptr).read(4321, 1), pattern(4321));
  }
  EXPECT_EQ(bm.counters().swizzled_hits - before.swizzled_hits, 1u);
  EXPECT_EQ(bm.counters().page_table_lookups, before.page_table_lookups);
  EXPECT_EQ(bm.counters().reader_misses, before.reader_misses);
}

// A frame let go while another reader is inside is not reused until that reader leaves: the
// bytes it holds stay intact, and a miss that finds no other frame is told to retry
// exclusively. Once the reader has left, the frames come back.
TEST(TiersResidentReads, FramesLetGoWaitForTheReadersInside) {
  TestTiers tiers("resident-grace", 256, 512);
  BufferManager bm(three_tier(tiers, true, /*slabs=*/8));
  ReaderSlots slots;
  bm.share_with(&slots);
  const std::vector<Swip> pages = pages_in_nvm(bm, 200);
  std::vector<Swip> roots = pages;  // one root swip per page, swizzled by the reads

  // Another thread reads pages 0 to 9 and stays inside, holding their bytes.
  constexpr std::size_t kHeld = 10;
  std::atomic<int> step{0};
  std::thread other([&] {
    const Inside inside(slots);
    ResidentReads reads(bm);
    std::vector<const std::byte*> held;
    for (std::size_t p = 0; p < kHeld; ++p)
      held.push_back(reads.fix(roots[p], nullptr).read(5000, 64));
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    for (std::size_t p = 0; p < kHeld; ++p)
      for (std::size_t i = 0; i < 64; ++i) ASSERT_EQ(held[p][i], pattern(5000 + i, p)) << p;
  });
  while (step.load() != 1) std::this_thread::yield();
  // This thread reads the other pages; DRAM holds 8 x 15 mini pages: pages the other thread
  // holds are evicted, and at last no frame is free that it may not still see.
  bool retried = false;
  std::size_t p = kHeld;
  for (; p < pages.size() && !retried; ++p) {
    const Inside inside(slots);
    ResidentReads reads(bm);
    try {
      EXPECT_EQ(*reads.fix(roots[p], nullptr).read(5000, 1), pattern(5000, p)) << p;
    } catch (const ResidentReads::NotResident&) {
      retried = true;
    }
  }
  EXPECT_TRUE(retried) << "read " << p << " pages without reusing a frame";
  EXPECT_EQ(bm.memory_usage().dram_bytes_used, 8 * FramePool::kMinisPerSlab * sizeof(MiniPage))
      << "every mini page live or retired";
  step = 2;
  other.join();
  // Both have left: the retired frames serve the next reads.
  for (std::size_t q = 0; q < pages.size(); ++q) {
    const Inside inside(slots);
    ResidentReads reads(bm);
    ASSERT_EQ(*reads.fix(roots[q], nullptr).read(8000, 1), pattern(8000, q)) << q;
  }
  EXPECT_EQ(bm.counters().reader_retries, 1u);
}

// Lines are appended beside other readers only to the page's own frame: a reader holding a
// frame let go meanwhile (its NVM slot may hold another page by now) has its read served under
// the miss latch, from the page's frame.
TEST(TiersResidentReads, AFrameLetGoGetsNoAppend) {
  TestTiers tiers("resident-append-let-go", 128, 256);
  BufferManager bm(three_tier(tiers, true, /*slabs=*/4));
  ReaderSlots slots;
  bm.share_with(&slots);
  const std::vector<Swip> pages = pages_in_nvm(bm, 100);
  std::vector<Swip> roots = pages;
  const Inside inside(slots);
  ResidentReads reads(bm);
  ResidentReads::Guard held = reads.fix(roots[0], nullptr);
  EXPECT_EQ(*held.read(64, 1), pattern(64, 0));
  // Read other pages until page 0 is evicted (its frame stays: this reader is inside).
  for (std::size_t p = 1; p < pages.size(); ++p) {
    if (bm.location(pages[0].page_id()) != BufferManager::Location::kDramMini) break;
    try {
      EXPECT_EQ(*reads.fix(roots[p], nullptr).read(64, 1), pattern(64, p));
    } catch (const ResidentReads::NotResident&) {
      break;
    }
  }
  ASSERT_EQ(bm.location(pages[0].page_id()), BufferManager::Location::kNvm);
  const Counters before = bm.counters();
  EXPECT_EQ(*held.read(5000, 1), pattern(5000, 0));
  EXPECT_EQ(bm.counters().reader_appends, before.reader_appends);
  EXPECT_EQ(bm.counters().reader_misses, before.reader_misses + 1);
  EXPECT_NE(bm.location(pages[0].page_id()), BufferManager::Location::kNvm) << "loaded anew";
}

TEST(TiersRetiredFrames, AFrameComesBackOnlyAfterEveryReaderInsideHasLeft) {
  ReaderSlots slots;
  RetiredFrames retired;
  FrameHeader a, b;
  std::vector<FrameHeader*> released;
  auto release = [&](FrameHeader* frame) { released.push_back(frame); };
  std::atomic<int> step{0};
  std::thread reader([&] {
    slots.enter();
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    slots.leave();
    slots.enter();  // inside again: a new read, which cannot see what was let go before
    step = 3;
    while (step.load() != 4) std::this_thread::yield();
    slots.leave();
  });
  while (step.load() != 1) std::this_thread::yield();
  retired.retire(&a);
  EXPECT_TRUE(a.has(frame_flag::kRetired));
  EXPECT_EQ(retired.reclaim(&slots, nullptr, false, release), 0u) << "the reader is inside";
  step = 2;
  while (step.load() != 3) std::this_thread::yield();
  retired.retire(&b);
  EXPECT_EQ(retired.reclaim(&slots, nullptr, false, release), 1u)
      << "a: its reader left, though inside again";
  EXPECT_EQ(released, std::vector<FrameHeader*>{&a});
  EXPECT_EQ(retired.reclaim(&slots, nullptr, false, release), 0u)
      << "b: the reader inside when it went is";
  step = 4;
  reader.join();
  EXPECT_EQ(retired.reclaim(&slots, nullptr, false, release), 1u);
  EXPECT_TRUE(retired.empty());
  EXPECT_EQ(released, (std::vector<FrameHeader*>{&a, &b}));
}

// Without the changers' slots, a frame let go beside changes comes back only once no change
// may be inside, whatever the readers do.
TEST(TiersRetiredFrames, AFrameLetGoBesideChangesComesBackOnlyOnceNoChangeIsInside) {
  ReaderSlots slots;
  RetiredFrames retired;
  FrameHeader a;
  std::vector<FrameHeader*> released;
  auto release = [&](FrameHeader* frame) { released.push_back(frame); };
  retired.retire_beside_changes(&a);
  EXPECT_TRUE(a.has(frame_flag::kRetired));
  EXPECT_FALSE(retired.empty());
  EXPECT_EQ(retired.reclaim(&slots, nullptr, true, release), 0u) << "changes may be inside";
  EXPECT_EQ(retired.reclaim(nullptr, nullptr, true, release), 0u) << "no reader, but changes";
  EXPECT_EQ(retired.reclaim(&slots, nullptr, false, release), 1u);
  EXPECT_EQ(released, std::vector<FrameHeader*>{&a});
  EXPECT_TRUE(retired.empty());
}

// With the changers' slots, a frame let go beside changes comes back once every change inside
// when it was let go (pictured at the end of the miss) has left, while changes go on; and at
// once where no change may be inside.
TEST(TiersRetiredFrames, AFrameLetGoBesideChangesComesBackOnceTheChangesInsideThenHaveLeft) {
  ReaderSlots readers, changers;
  RetiredFrames retired;
  FrameHeader a, b, c;
  std::vector<FrameHeader*> released;
  auto release = [&](FrameHeader* frame) { released.push_back(frame); };
  std::atomic<int> step{0};
  std::thread changer([&] {
    changers.enter();
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    changers.leave();
    changers.enter();  // a new change, which cannot reach what was let go before
    step = 3;
    while (step.load() != 4) std::this_thread::yield();
    changers.leave();
  });
  while (step.load() != 1) std::this_thread::yield();
  retired.retire_beside_changes(&a);
  retired.picture(&readers, &changers);  // the end of the miss that let a go
  EXPECT_EQ(retired.reclaim(&readers, &changers, true, release), 0u) << "its changer is inside";
  step = 2;
  while (step.load() != 3) std::this_thread::yield();
  retired.retire_beside_changes(&b);
  EXPECT_EQ(retired.reclaim(&readers, &changers, true, release), 1u)
      << "a: its changer left, though inside again";
  EXPECT_EQ(released, std::vector<FrameHeader*>{&a});
  EXPECT_EQ(retired.reclaim(&readers, &changers, true, release), 0u)
      << "b: the change inside when it went is";
  step = 4;
  changer.join();
  EXPECT_EQ(retired.reclaim(&readers, &changers, true, release), 1u);
  EXPECT_EQ(released, (std::vector<FrameHeader*>{&a, &b}));
  // Where no change may be inside (a reader's miss, the exclusive latch), at once.
  changers.enter();
  retired.retire_beside_changes(&c);
  retired.picture(&readers, &changers);
  EXPECT_EQ(retired.reclaim(&readers, &changers, true, release), 0u);
  EXPECT_EQ(retired.reclaim(&readers, &changers, false, release), 1u);
  changers.leave();
  EXPECT_TRUE(retired.empty());
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

// Threads reading many pages through a DRAM far too small for them, as the database does:
// shared, with misses served beside the other readers (loads, copies, promotions, evictions,
// retired frames), and exclusive through the buffer manager when told to retry. Every byte
// read is the page's. Run under ThreadSanitizer too.
TEST(TiersResidentReads, ThreadsMissingBesideEachOtherReadTheRightBytes) {
  const std::uint64_t seed = testing_support::test_seed();
  TestTiers tiers("resident-miss-threads", 256, 512);
  BufferManager bm(three_tier(tiers, true, /*slabs=*/12));
  OperationLatch latch;
  bm.share_with(&latch.readers());
  constexpr std::size_t kPages = 120;
  const std::vector<Swip> pages = pages_in_nvm(bm, kPages);
  std::vector<Swip> roots = pages;
  const int retries = testing::read_pattern_pages_side_by_side(bm, latch, roots, /*threads=*/6,
                                                               /*reads=*/3000, seed,
                                                               /*whole_one_in=*/16);
  const Counters counters = bm.counters();
  EXPECT_EQ(counters.reader_retries, static_cast<std::uint64_t>(retries));
  EXPECT_GT(counters.reader_misses, 1000u);
  EXPECT_GT(counters.dram_evictions, 100u);
  EXPECT_GT(counters.mini_page_copies, 20u);
  EXPECT_GT(counters.reader_appends, 1000u);
  EXPECT_GT(counters.mini_page_promotions, 10u);
  std::printf(
      "appends %llu, misses %llu, retried %d, evictions %llu, copies %llu, promotions %llu\n",
      static_cast<unsigned long long>(counters.reader_appends),
      static_cast<unsigned long long>(counters.reader_misses), retries,
      static_cast<unsigned long long>(counters.dram_evictions),
      static_cast<unsigned long long>(counters.mini_page_copies),
      static_cast<unsigned long long>(counters.mini_page_promotions));
  bm.flush_all();
}

}  // namespace
}  // namespace tristore
