// Targeted tests of the buffer manager: swizzling, mini pages, admission, eviction paths,
// architectures, errors, reopening.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "btree/page_access.hpp"
#include "common/error.hpp"
#include "common/page_format.hpp"
#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"

namespace tristore {
namespace {

static_assert(PageAccess<BufferManager>);

using Guard = BufferManager::Guard;
using Location = BufferManager::Location;
using testing::TestTiers;

constexpr std::uint64_t kFrames = 8;

BufferManagerOptions three_tier(TestTiers& tiers) {
  BufferManagerOptions options;
  options.dram_bytes = kFrames * FramePool::kSlabBytes;
  options.nvm = tiers.nvm.get();
  options.ssd = tiers.ssd.get();
  return options;
}

// Fills bytes [32, 16 KiB) with a pattern of `seed`.
void fill(Guard& guard, std::uint8_t seed) {
  std::byte* page = guard.whole_page();
  for (std::size_t i = kPageHeaderSize; i < kPageSize; ++i) page[i] = std::byte(seed + i * 7);
  guard.mark_dirty(kPageHeaderSize, kPageSize - kPageHeaderSize);
}
std::byte expected(std::uint8_t seed, std::size_t i) { return std::byte(seed + i * 7); }

Swip& swip_at(Guard& parent, std::uint32_t offset) {
  return *reinterpret_cast<Swip*>(parent.write(offset, sizeof(Swip)));
}

TEST(TiersBufferManager, SwizzledFixSkipsThePageTable) {
  TestTiers tiers("swizzle", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip root;
  {
    Guard page = bm.allocate_page();
    root = bm.swip_of(page);
    fill(page, 1);
  }
  bm.flush_all();
  const Counters before = bm.own_counters();
  { Guard first = bm.fix(root, nullptr); }
  EXPECT_TRUE(root.is_swizzled());
  EXPECT_EQ(bm.own_counters().page_table_lookups - before.page_table_lookups, 1u);
  {
    Guard second = bm.fix(root, nullptr);
    EXPECT_EQ(*second.read(100, 1), expected(1, 100));
  }
  EXPECT_EQ(bm.own_counters().page_table_lookups - before.page_table_lookups, 1u);
  EXPECT_EQ(bm.own_counters().swizzled_hits - before.swizzled_hits, 1u);
}

TEST(TiersBufferManager, EvictingASwizzledChildRestoresItsPageIdWithoutWritingTheParent) {
  TestTiers tiers("unswizzle", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip root;
  PageId child_id;
  {
    Guard parent = bm.allocate_page();
    root = bm.swip_of(parent);
    Guard child = bm.allocate_page();
    child_id = child.page_id();
    const Swip child_swip = bm.swip_of(child);
    std::memcpy(parent.write(64, sizeof(Swip)), &child_swip, sizeof(Swip));
  }
  bm.flush_all();  // both pages clean in NVM now
  {
    Guard parent = bm.fix(root, nullptr);
    Guard child =
        bm.fix(*reinterpret_cast<Swip*>(const_cast<std::byte*>(parent.read(64, 8))), &parent);
    EXPECT_EQ(child.page_id(), child_id);
  }
  // The parent is a mini page: its child stayed unswizzled. Promote it, then swizzle.
  {
    Guard parent = bm.fix(root, nullptr);
    parent.whole_page();
    Guard child =
        bm.fix(*reinterpret_cast<Swip*>(const_cast<std::byte*>(parent.read(64, 8))), &parent);
    Swip stored;
    std::memcpy(&stored, parent.read(64, 8), 8);
    EXPECT_TRUE(stored.is_swizzled());
  }
  const Counters before = bm.counters();
  while (bm.evict_one_dram_frame()) {
  }
  const Counters after = bm.counters();
  EXPECT_EQ(after.nvm_lines_written, before.nvm_lines_written) << "clean pages, nothing to write";
  EXPECT_EQ(after.ssd_pages_written, before.ssd_pages_written);
  Guard parent = bm.fix(root, nullptr);
  Swip stored;
  std::memcpy(&stored, parent.read(64, 8), 8);
  ASSERT_FALSE(stored.is_swizzled());
  EXPECT_EQ(stored.page_id(), child_id);
}

TEST(TiersBufferManager, APageWithASwizzledChildIsNotEvicted) {
  TestTiers tiers("pinned-parent", 16, 64);
  BufferManager bm(three_tier(tiers));
  Guard parent = bm.allocate_page();
  Swip root = bm.swip_of(parent);
  Guard child = bm.allocate_page();
  const Swip child_swip = bm.swip_of(child);
  std::memcpy(parent.write(64, 8), &child_swip, 8);
  const PageId parent_id = parent.page_id();
  child.release();
  parent.release();
  {
    Guard p = bm.fix(root, nullptr);
    Guard c = bm.fix(swip_at(p, 64), &p);
    p.release();
    // The child stays fixed: the parent has a swizzled child and must survive every eviction.
    while (bm.evict_one_dram_frame()) {
    }
    EXPECT_EQ(bm.location(parent_id), Location::kDramFull);
  }
  while (bm.evict_one_dram_frame()) {
  }
  EXPECT_NE(bm.location(parent_id), Location::kDramFull);
}

TEST(TiersBufferManager, MiniPageLoadsOnlyMissingLinesKeepsThemContiguousAndPromotesOnOverflow) {
  TestTiers tiers("mini", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip root;
  {
    Guard page = bm.allocate_page();
    root = bm.swip_of(page);
    fill(page, 9);
  }
  bm.flush_all();
  Guard page = bm.fix(root, nullptr);
  ASSERT_TRUE(page.on_mini_page());
  auto lines_read = [&] { return bm.counters().nvm_lines_read; };
  const std::uint64_t start = lines_read();
  EXPECT_EQ(*page.read(5 * 64 + 3, 1), expected(9, 5 * 64 + 3));
  EXPECT_EQ(lines_read() - start, 1u);
  page.read(5 * 64, 64);
  EXPECT_EQ(lines_read() - start, 1u) << "resident line loaded again";
  // A request spanning lines 3..4 is contiguous although line 5 was loaded before line 3.
  const std::byte* span = page.read(3 * 64 + 10, 100);
  for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(span[i], expected(9, 3 * 64 + 10 + i));
  EXPECT_EQ(lines_read() - start, 3u);
  // Fill the 16 slots (lines 3, 4, 5 and 13 more, out of order), then overflow.
  for (std::size_t line : {200, 7, 150, 9, 30, 31, 60, 61, 90, 255, 1, 100, 120})
    page.read(line * 64, 8);
  EXPECT_TRUE(page.on_mini_page());
  std::byte* written = page.write(150 * 64, 4);
  std::memset(written, 0xAB, 4);
  const std::byte* old = page.read(7 * 64, 64);
  const std::uint64_t promotions = bm.counters().mini_page_promotions;
  page.read(40 * 64, 1);
  EXPECT_EQ(bm.counters().mini_page_promotions, promotions + 1);
  EXPECT_FALSE(page.on_mini_page());
  EXPECT_EQ(old[0], expected(9, 7 * 64)) << "the mini page stays readable until released";
  EXPECT_EQ(*page.read(150 * 64, 1), std::byte{0xAB}) << "dirty line copied into the full frame";
  const std::byte* whole = page.whole_page();
  for (std::size_t i = kPageHeaderSize; i < kPageSize; ++i) {
    if (i < 150 * 64 || i >= 150 * 64 + 4) {
      ASSERT_EQ(whole[i], expected(9, i)) << i;
    }
  }
  page.release();
  // Only the one dirty line goes back to NVM, and the slot header with the page's checksum
  // (the whole page is in DRAM now).
  const std::uint64_t written_before = bm.counters().nvm_lines_written;
  bm.flush_all();
  EXPECT_EQ(bm.counters().nvm_lines_written - written_before, 1u + 1u);
}

TEST(TiersBufferManager, MiniPageWritesBackOnlyItsDirtyLines) {
  TestTiers tiers("mini-dirty", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip root;
  {
    Guard page = bm.allocate_page();
    root = bm.swip_of(page);
    fill(page, 3);
  }
  bm.flush_all();
  {
    Guard page = bm.fix(root, nullptr);
    std::memset(page.write(64 * 10, 70), 0x11, 70);  // lines 10 and 11
    page.read(64 * 12, 8);
  }
  // The two dirty lines and the slot header once, with the checksum updated from the old
  // content of those two lines (read from NVM) instead of the whole page.
  const std::uint64_t before = bm.counters().nvm_lines_written;
  const std::uint64_t read_before = bm.counters().nvm_lines_read;
  bm.flush_all();
  EXPECT_EQ(bm.counters().nvm_lines_written - before, 2u + 1u);
  EXPECT_EQ(bm.counters().nvm_lines_read - read_before, 2u);
  Guard page = bm.fix(root, nullptr);
  EXPECT_EQ(*page.read(64 * 10 + 69, 1), std::byte{0x11});
  EXPECT_EQ(*page.read(64 * 11 + 6, 1), expected(3, 64 * 11 + 6));
}

TEST(TiersBufferManager, WithoutCacheLineGrainedLoadsAPageFromNvmWhole) {
  TestTiers tiers("no-cl", 16, 64);
  BufferManagerOptions options = three_tier(tiers);
  options.cache_line_grained = false;
  BufferManager bm(options);
  Swip root;
  {
    Guard page = bm.allocate_page();
    root = bm.swip_of(page);
    fill(page, 5);
  }
  bm.flush_all();
  const std::uint64_t before = bm.counters().nvm_lines_read;
  Guard page = bm.fix(root, nullptr);
  EXPECT_FALSE(page.on_mini_page());
  EXPECT_EQ(*page.read(64 * 77, 1), expected(5, 64 * 77));
  EXPECT_EQ(bm.counters().nvm_lines_read - before, kLinesPerPage);
}

TEST(TiersBufferManager, WithoutMiniPagesLoadsLinesIntoAFullFrame) {
  TestTiers tiers("no-mini", 16, 64);
  BufferManagerOptions options = three_tier(tiers);
  options.mini_pages = false;
  BufferManager bm(options);
  Swip root;
  {
    Guard page = bm.allocate_page();
    root = bm.swip_of(page);
    fill(page, 6);
  }
  bm.flush_all();
  const std::uint64_t before = bm.counters().nvm_lines_read;
  Guard page = bm.fix(root, nullptr);
  EXPECT_FALSE(page.on_mini_page());
  for (std::size_t line = 1; line < 40; ++line) page.read(line * 64, 64);
  EXPECT_EQ(bm.counters().nvm_lines_read - before, 39u);
  EXPECT_EQ(bm.counters().mini_pages_created, 0u);
}

TEST(TiersBufferManager, AdmissionSetAdmitsAPageOnItsSecondEviction) {
  TestTiers tiers("admission", 16, 64);
  BufferManagerOptions options = three_tier(tiers);
  options.admit_while_nvm_has_free_slots = false;
  BufferManager bm(options);
  Swip root;
  PageId id;
  {
    Guard page = bm.allocate_page();
    root = bm.swip_of(page);
    id = page.page_id();
    fill(page, 2);
  }
  bm.flush_all();  // first eviction: denied, the dirty page goes to SSD (transition 5)
  EXPECT_EQ(bm.location(id), Location::kSsd);
  EXPECT_EQ(bm.counters().nvm_admissions_denied, 1u);
  EXPECT_EQ(bm.counters().ssd_pages_written, 1u);
  { Guard page = bm.fix(root, nullptr); }  // transition 1
  EXPECT_EQ(bm.counters().ssd_pages_read, 1u);
  bm.flush_all();  // second eviction: admitted (transition 4), clean: no SSD write
  EXPECT_EQ(bm.location(id), Location::kNvm);
  EXPECT_EQ(bm.counters().nvm_admissions, 1u);
  EXPECT_EQ(bm.admission_stats().admitted_from_set, 1u);
  EXPECT_EQ(bm.counters().ssd_pages_written, 1u);
  EXPECT_FALSE(tiers.nvm->header(tiers.nvm->slot_of(tiers.nvm->slot(0))).dirty_vs_ssd() &&
               tiers.nvm->header(0).page_id != id);
}

TEST(TiersBufferManager, NvmEvictionWritesToSsdOnlyPagesDirtyVsSsd) {
  TestTiers tiers("nvm-evict", 2, 64);
  BufferManager bm(three_tier(tiers));
  std::vector<Swip> roots(3);
  for (auto& root : roots) {
    Guard page = bm.allocate_page();
    root = bm.swip_of(page);
    fill(page, static_cast<std::uint8_t>(page.page_id()));
  }
  bm.flush_all();  // two into the free NVM slots (dirty vs SSD), the third denied to SSD
  EXPECT_EQ(bm.admission_stats().admitted_to_free_slot, 2u);
  EXPECT_EQ(bm.counters().ssd_pages_written, 1u);
  EXPECT_TRUE(tiers.nvm->header(0).dirty_vs_ssd());
  ASSERT_TRUE(bm.evict_one_nvm_page());  // dirty vs SSD: written
  EXPECT_EQ(bm.counters().ssd_pages_written, 2u);
  ASSERT_TRUE(bm.evict_one_nvm_page());
  EXPECT_EQ(bm.counters().ssd_pages_written, 3u);
  EXPECT_EQ(bm.counters().nvm_evictions, 2u);
  // A clean page loaded from SSD and admitted is not dirty vs SSD: evicting it writes nothing.
  { Guard page = bm.fix(roots[0], nullptr); }
  bm.flush_all();
  EXPECT_EQ(bm.counters().nvm_admissions, 3u);
  ASSERT_TRUE(bm.evict_one_nvm_page());
  EXPECT_EQ(bm.counters().ssd_pages_written, 3u);
  for (std::size_t i = 0; i < roots.size(); ++i) {
    roots[i] = Swip::from_page_id(roots[i].is_swizzled() ? 0 : roots[i].page_id());
    Guard page = bm.fix(roots[i], nullptr);
    EXPECT_EQ(*page.read(999, 1), expected(static_cast<std::uint8_t>(page.page_id()), 999));
  }
}

TEST(TiersBufferManager, NvmSlotHeaderCarriesThePageLsnAndDirtyVsSsd) {
  TestTiers tiers("lsn", 4, 16);
  BufferManager bm(three_tier(tiers));
  auto set_lsn = [](Guard& page, Lsn lsn) {
    std::memcpy(page.write(offsetof(PageHeader, lsn), sizeof(Lsn)), &lsn, sizeof(Lsn));
  };
  Swip root;
  {
    Guard page = bm.allocate_page();
    root = bm.swip_of(page);
    set_lsn(page, 77);
  }
  bm.flush_all();  // admitted to a free slot: the header is written with the page
  const NvmSlotHeader& header = tiers.nvm->header(0);
  EXPECT_EQ(header.page_id, root.page_id());
  EXPECT_EQ(header.lsn, 77u);
  EXPECT_TRUE(header.dirty_vs_ssd()) << "a new page was never written to SSD";
  EXPECT_TRUE(tiers.nvm->header_valid(0));
  {
    Guard page = bm.fix(root, nullptr);  // a mini page: only line 0 is loaded and written back
    set_lsn(page, 99);
  }
  bm.flush_all();
  EXPECT_EQ(tiers.nvm->header(0).lsn, 99u);
}

TEST(TiersBufferManager, MoveSwipsRetargetsSwizzledChildren) {
  TestTiers tiers("move-swips", 16, 64);
  BufferManager bm(three_tier(tiers));
  Guard parent = bm.allocate_page();
  Swip root = bm.swip_of(parent);
  Guard other = bm.allocate_page();
  Swip other_root = bm.swip_of(other);
  PageId child_id;
  {
    Guard child = bm.allocate_page();
    child_id = child.page_id();
    const Swip swip = bm.swip_of(child);
    std::memcpy(parent.write(64, 8), &swip, 8);
  }
  { Guard child = bm.fix(swip_at(parent, 64), &parent); }
  // Within the page, then into another page.
  bm.move_swips(parent, 128, &parent, &swip_at(parent, 64), 1);
  bm.move_swips(other, 256, &parent, &swip_at(parent, 128), 1);
  Swip stored;
  std::memcpy(&stored, parent.read(64, 8), 8);
  EXPECT_FALSE(stored.is_swizzled()) << "no stale pointer left in the source";
  parent.release();
  other.release();
  while (bm.evict_one_dram_frame()) {
  }
  // Everything could be evicted: the counts of swizzled children were moved correctly.
  EXPECT_EQ(bm.memory_usage().dram_bytes_used, 0u);
  Guard again = bm.fix(other_root, nullptr);
  std::memcpy(&stored, again.read(256, 8), 8);
  ASSERT_FALSE(stored.is_swizzled());
  EXPECT_EQ(stored.page_id(), child_id);
  (void)root;
}

TEST(TiersBufferManager, FreePageReturnsItsSsdPageAndNvmSlot) {
  TestTiers tiers("free", 16, 64);
  BufferManager bm(three_tier(tiers));
  Swip root;
  PageId id;
  {
    Guard page = bm.allocate_page();
    root = bm.swip_of(page);
    id = page.page_id();
  }
  bm.flush_all();
  EXPECT_EQ(tiers.nvm->slots_in_use(), 1u);
  Guard page = bm.fix(root, nullptr);
  bm.free_page(std::move(page));
  EXPECT_FALSE(tiers.ssd->is_allocated(id));
  EXPECT_EQ(tiers.nvm->slots_in_use(), 0u);
  EXPECT_EQ(bm.location(id), Location::kNowhere);
}

TEST(TiersBufferManager, BasicNvmKeepsEveryPageInTheSlotOfItsId) {
  TestTiers tiers("basic-nvm", 6, 0);
  BufferManagerOptions options;
  options.dram_bytes = 4 * FramePool::kSlabBytes;
  options.nvm = tiers.nvm.get();
  std::vector<PageId> ids;
  {
    BufferManager bm(options);
    EXPECT_FALSE(bm.options().swizzling);
    for (int i = 0; i < 6; ++i) {
      Guard page = bm.allocate_page();
      EXPECT_EQ(tiers.nvm->header(static_cast<SlotId>(page.page_id())).page_id, page.page_id());
      fill(page, static_cast<std::uint8_t>(40 + i));
      ids.push_back(page.page_id());
    }
    EXPECT_THROW(bm.allocate_page(), Error);  // NVM is the only home: full means full
    bm.flush_all();
  }
  tiers.reopen();
  options.nvm = tiers.nvm.get();
  BufferManager bm(options);
  for (int i = 0; i < 6; ++i) {
    Swip swip = Swip::from_page_id(ids[i]);
    Guard page = bm.fix(swip, nullptr);
    EXPECT_FALSE(swip.is_swizzled());
    EXPECT_EQ(*page.read(5000, 1), expected(static_cast<std::uint8_t>(40 + i), 5000));
  }
  EXPECT_EQ(bm.counters().ssd_pages_read, 0u);
}

TEST(TiersBufferManager, ReopenAfterFlushFindsPagesInNvmAndOnSsd) {
  TestTiers tiers("reopen", 3, 64);
  std::vector<PageId> ids;
  {
    BufferManager bm(three_tier(tiers));
    for (int i = 0; i < 8; ++i) {
      Guard page = bm.allocate_page();
      fill(page, static_cast<std::uint8_t>(i));
      ids.push_back(page.page_id());
    }
    bm.flush_all();
  }
  tiers.reopen();
  BufferManager bm(three_tier(tiers));
  std::size_t in_nvm = 0;
  for (int i = 0; i < 8; ++i) {
    in_nvm += bm.location(ids[i]) == Location::kNvm ? 1 : 0;
    Swip swip = Swip::from_page_id(ids[i]);
    Guard page = bm.fix(swip, nullptr);
    for (std::size_t at : {std::size_t{40}, std::size_t{8000}, kPageSize - 1})
      EXPECT_EQ(*page.read(static_cast<std::uint32_t>(at), 1),
                expected(static_cast<std::uint8_t>(i), at));
  }
  EXPECT_EQ(in_nvm, 3u);
}

TEST(TiersBufferManager, ExhaustedPoolAndTinyBudgetAreErrors) {
  TestTiers tiers("errors", 16, 64);
  BufferManagerOptions options = three_tier(tiers);
  options.dram_bytes = 1000;
  EXPECT_THROW(BufferManager{options}, Error);
  options.dram_bytes = 4 * FramePool::kSlabBytes;
  BufferManager bm(options);
  std::vector<Guard> held;
  for (int i = 0; i < 4; ++i) held.push_back(bm.allocate_page());
  EXPECT_THROW(bm.allocate_page(), Error);
  EXPECT_THROW(bm.flush_all(), Error);
  held.clear();
  EXPECT_NO_THROW(bm.flush_all());
  BufferManagerOptions none;
  none.dram_bytes = 8 * FramePool::kSlabBytes;
  EXPECT_THROW(BufferManager{none}, Error);
}

TEST(TiersBufferManager, MemoryUsageStaysWithinTheBudget) {
  TestTiers tiers("memory", 32, 128);
  BufferManager bm(three_tier(tiers));
  std::vector<Swip> roots;
  for (int i = 0; i < 30; ++i) {
    Guard page = bm.allocate_page();
    roots.push_back(bm.swip_of(page));
    EXPECT_LE(bm.memory_usage().dram_bytes_used, bm.memory_usage().dram_budget_bytes);
  }
  bm.flush_all();
  for (auto& root : roots) {
    Guard page = bm.fix(root, nullptr);
    page.read(100, 8);
    EXPECT_LE(bm.memory_usage().dram_bytes_used, bm.memory_usage().dram_budget_bytes);
  }
  EXPECT_GT(bm.memory_usage().page_table_bytes, 0u);
  EXPECT_GT(bm.counters().mini_pages_created, kFrames) << "mini pages share slabs";
}

}  // namespace
}  // namespace tristore
