// Readers' whole-page reads outside the miss latch (tiers/page_loads.cpp), from SSD and from a
// page-grained NVM tier: two readers missing have their reads in flight at once; a reader that
// wants a page another reader is reading waits for that read rather than reading it again; a
// failed read leaves the page where it was, to the next reader; and threads missing through a
// small DRAM read the right bytes. The SSD file's before_read hook (the NVM tier's
// before_page_read) holds a read in flight (or fails it) until the test has seen what it
// wants, with a generous deadline so that an engine that reads under the miss latch fails
// rather than hangs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/page_format.hpp"
#include "engine/operation_latch.hpp"
#include "tests/test_support.hpp"
#include "tests/tiers_pattern_pages.hpp"
#include "tests/tiers_pattern_readers.hpp"
#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/resident_reads.hpp"

namespace tristore {
namespace {

using Guard = BufferManager::Guard;
using testing::pattern;
using testing::pattern_pages_written_down;
using testing::TestTiers;
using Clock = std::chrono::steady_clock;

constexpr auto kDeadline = std::chrono::seconds(30);

BufferManagerOptions ssd_only(TestTiers& tiers, std::size_t slabs = 16) {
  BufferManagerOptions options;
  options.dram_bytes = slabs * FramePool::kSlabBytes;
  options.ssd = tiers.ssd.get();
  return options;
}

// Waits until `done` or the deadline; whether `done`.
template <typename Done>
bool wait_for(Done&& done) {
  const auto deadline = Clock::now() + kDeadline;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// A reader sharing the database latch reads 64 bytes of page p at `at`: whether they are right.
bool read_right(BufferManager& bm, OperationLatch& latch, Swip& swip, std::size_t p,
                std::uint32_t at) {
  const OperationLatch::Shared shared(latch);
  ResidentReads reads(bm);
  const std::byte* bytes = reads.fix(swip, nullptr).read(at, 64);
  for (std::size_t b = 0; b < 64; ++b)
    if (bytes[b] != pattern(at + b, p)) return false;
  return true;
}

// Three readers of page p: the first, and once its read is inside (first_inside), two more;
// whether each read the right bytes.
std::vector<int> three_readers_of(BufferManager& bm, OperationLatch& latch, Swip& page,
                                  std::size_t p, const std::atomic<bool>& first_inside) {
  std::vector<int> right(3, 0);
  std::vector<std::thread> readers;
  readers.emplace_back([&] { right[0] = read_right(bm, latch, page, p, 64 * 7); });
  if (!wait_for([&] { return first_inside.load(); })) ADD_FAILURE() << "the first read never began";
  for (std::size_t r = 1; r < right.size(); ++r)
    readers.emplace_back([&, r] {
      right[r] = read_right(bm, latch, page, p, static_cast<std::uint32_t>(64 * (100 + r)));
    });
  for (std::thread& reader : readers) reader.join();
  return right;
}

TEST(TiersSsdLoads, TwoReadersMissingToSsdHaveTheirReadsInFlightAtOnce) {
  std::atomic<bool> armed{false};
  std::atomic<int> inside{0}, met{0};
  TestTiers tiers("ssd-loads-two", 0, 64, [&](PageId) {
    if (!armed.load()) return;
    inside.fetch_add(1);
    // Each read waits inside for the other: with reads one at a time, the first never sees
    // the second before its deadline.
    if (wait_for([&] { return inside.load() >= 2; })) met.fetch_add(1);
  });
  BufferManager bm(ssd_only(tiers));
  OperationLatch latch;
  bm.share_with(&latch.readers());
  std::vector<Swip> pages = pattern_pages_written_down(bm, 2);
  ASSERT_EQ(bm.location(pages[1].page_id()), BufferManager::Location::kSsd);
  const Counters before = bm.counters();
  armed = true;
  std::vector<int> right(2, 0);
  std::vector<std::thread> readers;
  for (std::size_t p = 0; p < 2; ++p)
    readers.emplace_back([&, p] { right[p] = read_right(bm, latch, pages[p], p, 1000); });
  for (std::thread& reader : readers) reader.join();
  EXPECT_EQ(met.load(), 2) << "each read saw the other in flight";
  EXPECT_EQ(right, std::vector<int>({1, 1}));
  EXPECT_EQ(bm.counters().ssd_pages_read - before.ssd_pages_read, 2u);
  EXPECT_EQ(bm.counters().reader_load_waits - before.reader_load_waits, 0u);
  bm.flush_all();
}

// Three readers want one page: the first reads it, the other two wait for that read (counted),
// and the page is read from SSD once. Swizzling (3tier's fix_for_reader) and the page table
// (ssd-bm's read_for_reader) both.
class TiersSsdLoadsWaiting : public ::testing::TestWithParam<bool> {};

TEST_P(TiersSsdLoadsWaiting, ReadersOfAPageOnItsWayFromSsdWaitForThatRead) {
  const bool swizzling = GetParam();
  std::atomic<bool> armed{false}, first_inside{false};
  std::atomic<int> calls{0};
  std::atomic<BufferManager*> manager{nullptr};
  bool others_waited = false;
  TestTiers tiers("ssd-loads-wait", swizzling ? 4 : 0, 64, [&](PageId) {
    if (!armed.load() || calls.fetch_add(1) != 0) return;
    first_inside = true;
    others_waited = wait_for([&] { return manager.load()->reader_load_waits() >= 2; });
  });
  BufferManagerOptions options = ssd_only(tiers);
  if (swizzling) {
    options.nvm = tiers.nvm.get();
    options.admit_while_nvm_has_free_slots = false;  // the pages go to SSD, not NVM
  }
  BufferManager bm(options);
  manager = &bm;
  OperationLatch latch;
  bm.share_with(&latch.readers());
  std::vector<Swip> pages = pattern_pages_written_down(bm, 3);
  Swip& page = pages[2];
  const PageId page_id = page.page_id();
  ASSERT_EQ(bm.location(page_id), BufferManager::Location::kSsd);
  const Counters before = bm.counters();
  armed = true;
  EXPECT_EQ(three_readers_of(bm, latch, page, 2, first_inside), std::vector<int>(3, 1));
  EXPECT_TRUE(others_waited);
  const Counters counters = bm.counters() - before;
  EXPECT_EQ(counters.ssd_pages_read, 1u) << "one read, the others waited for it";
  EXPECT_EQ(counters.reader_load_waits, 2u);
  EXPECT_EQ(bm.location(page_id), BufferManager::Location::kDramFull);
  if (swizzling) {
    EXPECT_TRUE(Swip::load(page).is_swizzled()) << "by the reader that read it";
  }
  bm.flush_all();
}

INSTANTIATE_TEST_SUITE_P(SwizzledOrThroughThePageTable, TiersSsdLoadsWaiting,
                         ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "three_tier" : "ssd_bm"; });

TEST(TiersSsdLoads, AFailedReadLeavesThePageToTheReaderWaitingForIt) {
  std::atomic<bool> armed{false}, first_inside{false};
  std::atomic<int> calls{0};
  std::atomic<BufferManager*> manager{nullptr};
  TestTiers tiers("ssd-loads-fail", 0, 64, [&](PageId page_id) {
    if (!armed.load() || calls.fetch_add(1) != 0) return;
    first_inside = true;
    wait_for([&] { return manager.load()->reader_load_waits() >= 1; });
    fail("injected read failure of SSD page {}", page_id);
  });
  BufferManager bm(ssd_only(tiers));
  manager = &bm;
  OperationLatch latch;
  bm.share_with(&latch.readers());
  std::vector<Swip> pages = pattern_pages_written_down(bm, 1);
  const Counters before = bm.counters();
  armed = true;
  std::string failure;
  int waiter_right = 0;
  std::thread first([&] {
    try {
      read_right(bm, latch, pages[0], 0, 2000);
    } catch (const Error& error) {
      failure = error.what();
    }
  });
  ASSERT_TRUE(wait_for([&] { return first_inside.load(); }));
  std::thread waiter([&] { waiter_right = read_right(bm, latch, pages[0], 0, 3000); });
  first.join();
  waiter.join();
  EXPECT_NE(failure.find("injected read failure"), std::string::npos) << failure;
  EXPECT_EQ(waiter_right, 1) << "the waiter read the page itself";
  const Counters counters = bm.counters() - before;
  EXPECT_EQ(counters.reader_load_waits, 1u);
  EXPECT_EQ(counters.ssd_pages_read, 1u) << "the failed read never reached the file";
  // The page stays in DRAM, whole: no read in flight is left behind.
  EXPECT_EQ(bm.location(pages[0].page_id()), BufferManager::Location::kDramFull);
  EXPECT_TRUE(read_right(bm, latch, pages[0], 0, 5000));
  EXPECT_EQ(bm.counters().ssd_pages_read - before.ssd_pages_read, 1u);
  bm.flush_all();
}

// Page-grained NVM tiers (basic-nvm; 3tier without cache-line-grained loads) copy a page whole
// into DRAM and pay its latency: outside the miss latch, as SSD reads.
struct PageGrainedNvm {
  const char* name;
  bool ssd;  // 3tier without cache-line loads: SSD below NVM, swizzling
};
constexpr PageGrainedNvm kPageGrainedNvm[] = {{"basic_nvm", false}, {"no_cl_grained", true}};
void PrintTo(const PageGrainedNvm& tier, std::ostream* out) { *out << tier.name; }

BufferManagerOptions page_grained_nvm(TestTiers& tiers, const PageGrainedNvm& tier,
                                      std::size_t slabs = 16) {
  BufferManagerOptions options;
  options.dram_bytes = slabs * FramePool::kSlabBytes;
  options.nvm = tiers.nvm.get();
  options.ssd = tier.ssd ? tiers.ssd.get() : nullptr;
  options.cache_line_grained = false;
  options.mini_pages = false;
  options.swizzling = tier.ssd;
  return options;
}

class TiersNvmPageLoads : public ::testing::TestWithParam<PageGrainedNvm> {};

TEST_P(TiersNvmPageLoads, TwoReadersMissingToNvmHaveTheirCopiesInFlightAtOnce) {
  std::atomic<bool> armed{false};
  std::atomic<int> inside{0}, met{0};
  TestTiers tiers("nvm-loads-two", 64, GetParam().ssd ? 64 : 0, {}, [&](SlotId) {
    if (!armed.load()) return;
    inside.fetch_add(1);
    // Each copy waits inside for the other: with copies one at a time under the miss latch,
    // the first never sees the second before its deadline.
    if (wait_for([&] { return inside.load() >= 2; })) met.fetch_add(1);
  });
  BufferManager bm(page_grained_nvm(tiers, GetParam()));
  OperationLatch latch;
  bm.share_with(&latch.readers());
  std::vector<Swip> pages = pattern_pages_written_down(bm, 2);
  const std::vector<PageId> ids = {pages[0].page_id(), pages[1].page_id()};
  for (const PageId id : ids) ASSERT_EQ(bm.location(id), BufferManager::Location::kNvm);
  const Counters before = bm.counters();
  armed = true;
  std::vector<int> right(2, 0);
  std::vector<std::thread> readers;
  for (std::size_t p = 0; p < 2; ++p)
    readers.emplace_back([&, p] { right[p] = read_right(bm, latch, pages[p], p, 1000); });
  for (std::thread& reader : readers) reader.join();
  EXPECT_EQ(met.load(), 2) << "each copy saw the other in flight";
  EXPECT_EQ(right, std::vector<int>({1, 1}));
  const Counters counters = bm.counters() - before;
  EXPECT_EQ(counters.nvm_lines_read, 2 * kLinesPerPage) << "each page copied once, whole";
  EXPECT_EQ(counters.reader_load_waits, 0u);
  for (const PageId id : ids) EXPECT_EQ(bm.location(id), BufferManager::Location::kDramFull);
  bm.flush_all();
}

TEST_P(TiersNvmPageLoads, ReadersOfAPageOnItsWayFromNvmWaitForThatCopy) {
  std::atomic<bool> armed{false}, first_inside{false};
  std::atomic<int> calls{0};
  std::atomic<BufferManager*> manager{nullptr};
  bool others_waited = false;
  TestTiers tiers("nvm-loads-wait", 64, GetParam().ssd ? 64 : 0, {}, [&](SlotId) {
    if (!armed.load() || calls.fetch_add(1) != 0) return;
    first_inside = true;
    others_waited = wait_for([&] { return manager.load()->reader_load_waits() >= 2; });
  });
  BufferManager bm(page_grained_nvm(tiers, GetParam()));
  manager = &bm;
  OperationLatch latch;
  bm.share_with(&latch.readers());
  std::vector<Swip> pages = pattern_pages_written_down(bm, 3);
  Swip& page = pages[2];
  const PageId page_id = page.page_id();
  ASSERT_EQ(bm.location(page_id), BufferManager::Location::kNvm);
  const Counters before = bm.counters();
  armed = true;
  EXPECT_EQ(three_readers_of(bm, latch, page, 2, first_inside), std::vector<int>(3, 1));
  EXPECT_TRUE(others_waited);
  const Counters counters = bm.counters() - before;
  EXPECT_EQ(calls.load(), 1) << "one copy, the others waited for it";
  EXPECT_EQ(counters.nvm_lines_read, kLinesPerPage);
  EXPECT_EQ(counters.reader_load_waits, 2u);
  EXPECT_EQ(bm.location(page_id), BufferManager::Location::kDramFull);
  if (GetParam().ssd) {
    EXPECT_TRUE(Swip::load(page).is_swizzled()) << "by the reader that copied it";
  }
  bm.flush_all();
}

// A copy that fails leaves the page in its NVM slot, where the page table leads again: the
// next reader copies it, and nothing is lost (a page-grained tier without SSD has it nowhere
// else).
TEST_P(TiersNvmPageLoads, AFailedCopyLeavesThePageInItsSlot) {
  std::atomic<bool> fail_next{false};
  TestTiers tiers("nvm-loads-fail", 64, GetParam().ssd ? 64 : 0, {}, [&](SlotId slot) {
    if (fail_next.exchange(false)) fail("injected read failure of NVM slot {}", slot);
  });
  BufferManager bm(page_grained_nvm(tiers, GetParam()));
  OperationLatch latch;
  bm.share_with(&latch.readers());
  std::vector<Swip> pages = pattern_pages_written_down(bm, 1);
  const PageId page_id = pages[0].page_id();
  fail_next = true;
  std::string failure;
  std::thread reader([&] {
    try {
      read_right(bm, latch, pages[0], 0, 2000);
    } catch (const Error& error) {
      failure = error.what();
    }
  });
  reader.join();
  EXPECT_NE(failure.find("injected read failure"), std::string::npos) << failure;
  EXPECT_EQ(bm.location(page_id), BufferManager::Location::kNvm);
  EXPECT_FALSE(Swip::load(pages[0]).is_swizzled());
  std::thread again([&] { EXPECT_TRUE(read_right(bm, latch, pages[0], 0, 3000)); });
  again.join();
  EXPECT_EQ(bm.location(page_id), BufferManager::Location::kDramFull);
  bm.flush_all();
}

// After a reopen a slot's content is checked against its checksum once, when its page is
// first loaded: a page-grained tier checks the copy it loads, so NVM is read once (256 lines,
// where checking the slot first read 512), outside the miss latch for readers and under the
// exclusive holder alike. A slot whose content does not match is refused with an Error naming
// it, and the page stays in its slot: refused again, never served.
TEST_P(TiersNvmPageLoads, AfterAReopenAPageIsReadFromNvmOnceAndCheckedFromItsCopy) {
  TestTiers tiers("nvm-loads-reopen", 64, GetParam().ssd ? 64 : 0);
  std::vector<PageId> ids;
  {
    BufferManager bm(page_grained_nvm(tiers, GetParam()));
    for (const Swip& page : pattern_pages_written_down(bm, 3)) ids.push_back(page.page_id());
  }
  tiers.reopen();
  // Page 2's slot gets a flipped byte in its data.
  std::optional<SlotId> slot_of_2;
  for (SlotId slot = 0; slot < tiers.nvm->slot_count(); ++slot)
    if (!tiers.nvm->header(slot).is_free() && tiers.nvm->header(slot).page_id == ids[2])
      slot_of_2 = slot;
  ASSERT_TRUE(slot_of_2.has_value());
  tiers.nvm->slot(*slot_of_2)[5000] ^= std::byte{0x40};
  BufferManager bm(page_grained_nvm(tiers, GetParam()));
  OperationLatch latch;
  bm.share_with(&latch.readers());
  std::vector<Swip> pages;
  for (const PageId id : ids) pages.push_back(Swip::from_page_id(id));
  // 1. A reader beside others, and the exclusive holder: one read of the page each.
  Counters before = bm.counters();
  std::thread reader([&] { EXPECT_TRUE(read_right(bm, latch, pages[0], 0, 1000)); });
  reader.join();
  EXPECT_EQ((bm.counters() - before).nvm_lines_read, kLinesPerPage);
  before = bm.counters();
  {
    Guard page = bm.fix(pages[1], nullptr);
    EXPECT_EQ(page.read(2000, 1)[0], pattern(2000, 1));
  }
  EXPECT_EQ((bm.counters() - before).nvm_lines_read, kLinesPerPage);
  // 2. The damaged page, both ways, twice: an Error naming the slot, the page left in it.
  for (int round = 0; round < 2; ++round) {
    std::string failure;
    std::thread damaged([&] {
      try {
        read_right(bm, latch, pages[2], 2, 1000);
      } catch (const Error& error) {
        failure = error.what();
      }
    });
    damaged.join();
    EXPECT_NE(failure.find("is corrupt"), std::string::npos) << failure;
    EXPECT_NE(failure.find("slot " + std::to_string(*slot_of_2)), std::string::npos) << failure;
    EXPECT_EQ(bm.location(ids[2]), BufferManager::Location::kNvm);
    try {
      bm.fix(pages[2], nullptr);
      ADD_FAILURE() << "the exclusive holder was served a corrupt page";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("is corrupt"), std::string::npos) << error.what();
    }
    EXPECT_EQ(bm.location(ids[2]), BufferManager::Location::kNvm);
  }
}

// Threads reading many pages through a DRAM far too small for them, copying them whole from
// NVM (and, below 3tier's NVM, from SSD) beside each other, beside DRAM and NVM evictions.
// Every byte read is the page's. Run under ThreadSanitizer too.
TEST_P(TiersNvmPageLoads, ThreadsMissingToNvmReadTheRightBytes) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr std::size_t kPages = 120;
  TestTiers tiers("nvm-loads-threads", GetParam().ssd ? 64 : kPages + 8, GetParam().ssd ? 512 : 0);
  BufferManager bm(page_grained_nvm(tiers, GetParam(), /*slabs=*/12));
  OperationLatch latch;
  bm.share_with(&latch.readers());
  std::vector<Swip> pages = pattern_pages_written_down(bm, kPages);
  const int retries = testing::read_pattern_pages_side_by_side(bm, latch, pages, /*threads=*/6,
                                                               /*reads=*/1500, seed);
  const Counters counters = bm.counters();
  EXPECT_EQ(counters.reader_retries, static_cast<std::uint64_t>(retries));
  EXPECT_GT(counters.nvm_lines_read, 500 * kLinesPerPage);
  EXPECT_GT(counters.dram_evictions, 1000u);
  std::printf("nvm lines read %llu, ssd reads %llu, waits %llu, retried %d, evictions %llu\n",
              static_cast<unsigned long long>(counters.nvm_lines_read),
              static_cast<unsigned long long>(counters.ssd_pages_read),
              static_cast<unsigned long long>(counters.reader_load_waits), retries,
              static_cast<unsigned long long>(counters.dram_evictions));
  bm.flush_all();
}

INSTANTIATE_TEST_SUITE_P(PageGrained, TiersNvmPageLoads, ::testing::ValuesIn(kPageGrainedNvm),
                         testing::ParamName{});

// Threads reading many pages through a DRAM far too small for them, most of them only on SSD:
// reads in flight beside loads, evictions (dirty pages none, clean ones dropped) and reads run
// again exclusively. Every byte read is the page's. Run under ThreadSanitizer too.
class TiersSsdLoadsThreads : public ::testing::TestWithParam<bool> {};

TEST_P(TiersSsdLoadsThreads, ThreadsMissingToSsdReadTheRightBytes) {
  const bool three_tier = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  TestTiers tiers("ssd-loads-threads", three_tier ? 16 : 0, 512);
  BufferManagerOptions options = ssd_only(tiers, /*slabs=*/12);
  options.nvm = three_tier ? tiers.nvm.get() : nullptr;
  BufferManager bm(options);
  OperationLatch latch;
  bm.share_with(&latch.readers());
  constexpr std::size_t kPages = 120;
  std::vector<Swip> pages = pattern_pages_written_down(bm, kPages);
  const int retries = testing::read_pattern_pages_side_by_side(bm, latch, pages, /*threads=*/6,
                                                               /*reads=*/1500, seed);
  const Counters counters = bm.counters();
  EXPECT_EQ(counters.reader_retries, static_cast<std::uint64_t>(retries));
  EXPECT_GT(counters.ssd_pages_read, 1000u);
  EXPECT_GT(counters.dram_evictions, 1000u);
  std::printf("ssd reads %llu, waits %llu, retried %d, evictions %llu\n",
              static_cast<unsigned long long>(counters.ssd_pages_read),
              static_cast<unsigned long long>(counters.reader_load_waits), retries,
              static_cast<unsigned long long>(counters.dram_evictions));
  bm.flush_all();
}

INSTANTIATE_TEST_SUITE_P(Architectures, TiersSsdLoadsThreads, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "three_tier" : "ssd_bm"; });

}  // namespace
}  // namespace tristore
