// The double-write area on its own (tiers/double_write_area.hpp), over an NVM tier's log area:
// a staged write whose in-place write tore is mended whole, with a slot header that checks; a
// retired entry is not replayed over a later write; entries of a slot since reused by another
// page are skipped; the ring syncs the SSD before it overwrites an SSD page's entry not synced
// yet; and restore retires everything, so a second restore replays nothing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/page_format.hpp"
#include "nvm/nvm_page_checksum.hpp"
#include "nvm/nvm_tier.hpp"
#include "tiers/double_write_area.hpp"

namespace tristore {
namespace {

constexpr std::uint64_t kRingBytes = 2 * DoubleWriteArea::kMaxEntryBytes + 4096;

class DoubleWriteAreaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/dev/shm/tristore-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".nvm";
    NvmTierOptions options;
    options.device.path = path_;
    options.device.size_bytes = 4 << 20;
    options.log_bytes = 256 << 10;
    tier_ = NvmTier::create(options);
  }
  void TearDown() override {
    tier_.reset();
    std::remove(path_.c_str());
  }

  std::span<std::byte> ring() { return tier_->log_area().last(kRingBytes); }
  std::unique_ptr<DoubleWriteArea> area(int* syncs = nullptr) {
    return std::make_unique<DoubleWriteArea>(tier_->device(), ring(), [syncs] {
      if (syncs != nullptr) ++*syncs;
    });
  }

  // A page in slot `slot` with every byte `fill` after its header, LSN `lsn`, and a header
  // whose checksum matches it.
  void put_page(SlotId slot, PageId page_id, Lsn lsn, std::uint8_t fill) {
    std::vector<std::byte> page(kPageSize, std::byte{fill});
    PageHeader header{};
    header.page_id = page_id;
    header.lsn = lsn;
    std::memcpy(page.data(), &header, sizeof(header));
    tier_->device().write(tier_->slot(slot), page.data(), kPageSize);
    tier_->device().persist(tier_->slot(slot), kPageSize);
    tier_->write_header(slot, page_id, lsn, false, nvm_page_checksum(page.data()));
  }
  std::byte line_byte(SlotId slot, std::size_t line) {
    return tier_->slot(slot)[line * kCacheLineSize + 40];
  }

  // Stages lines 0 and 7 of slot's page as `fill` at LSN lsn; returns their bytes.
  std::vector<std::byte> stage(DoubleWriteArea& area, SlotId slot, PageId page_id, Lsn lsn,
                               std::uint8_t fill) {
    std::vector<std::byte> lines(2 * kCacheLineSize, std::byte{fill});
    PageHeader header{};
    header.page_id = page_id;
    header.lsn = lsn;
    std::memcpy(lines.data(), &header, sizeof(header));
    const std::array<std::uint8_t, 2> indices{0, 7};
    const std::array<const std::byte*, 2> from{lines.data(), lines.data() + kCacheLineSize};
    area.stage_nvm_lines(slot, page_id, lsn, indices, from);
    return lines;
  }

  std::string path_;
  std::unique_ptr<NvmTier> tier_;
};

TEST_F(DoubleWriteAreaTest, ATornWriteIsMendedWithAHeaderThatChecks) {
  const SlotId slot = *tier_->allocate_slot();
  put_page(slot, 5, 100, 0x11);
  auto ring = area();
  ring->restore(nullptr, nullptr);
  stage(*ring, slot, 5, 200, 0x22);
  // The crash: line 7 reached NVM, line 0 (the LSN) did not; the header is the old one.
  std::memset(tier_->slot(slot) + 7 * kCacheLineSize, 0x22, kCacheLineSize);
  EXPECT_THROW(tier_->check_content(slot), Error);
  const DoubleWriteRestore report = area()->restore(tier_.get(), nullptr);
  EXPECT_EQ(report.nvm_pages_mended, 1u);
  EXPECT_EQ(line_byte(slot, 0), std::byte{0x22});
  EXPECT_EQ(line_byte(slot, 7), std::byte{0x22});
  EXPECT_EQ(line_byte(slot, 8), std::byte{0x11});
  EXPECT_NO_THROW(tier_->check_content(slot));
  // Retired: a second restore finds nothing.
  EXPECT_EQ(area()->restore(tier_.get(), nullptr).entries_found, 0u);
}

TEST_F(DoubleWriteAreaTest, ARetiredEntryIsNotReplayedOverALaterWrite) {
  const SlotId slot = *tier_->allocate_slot();
  put_page(slot, 5, 100, 0x11);
  auto ring = area();
  ring->restore(nullptr, nullptr);
  stage(*ring, slot, 5, 200, 0x22);
  ring->nvm_lines_written();
  // A later write of the page, unstaged here (as if its entry were overwritten since).
  put_page(slot, 5, 300, 0x33);
  EXPECT_EQ(area()->restore(tier_.get(), nullptr).nvm_pages_mended, 0u);
  EXPECT_EQ(line_byte(slot, 7), std::byte{0x33});
}

TEST_F(DoubleWriteAreaTest, AnEntryForASlotNowHoldingAnotherPageIsSkipped) {
  const SlotId slot = *tier_->allocate_slot();
  put_page(slot, 5, 100, 0x11);
  auto ring = area();
  ring->restore(nullptr, nullptr);
  stage(*ring, slot, 5, 200, 0x22);
  put_page(slot, 9, 50, 0x44);  // the slot was freed and page 9 admitted into it
  EXPECT_EQ(area()->restore(tier_.get(), nullptr).nvm_pages_mended, 0u);
  EXPECT_EQ(line_byte(slot, 7), std::byte{0x44});
}

TEST_F(DoubleWriteAreaTest, EntriesReplayOldestFirstSoThePageEndsAsStagedLast) {
  const SlotId slot = *tier_->allocate_slot();
  put_page(slot, 5, 100, 0x11);
  auto ring = area();
  ring->restore(nullptr, nullptr);
  stage(*ring, slot, 5, 200, 0x22);  // not retired: its retirement was lost with the crash
  stage(*ring, slot, 5, 300, 0x33);
  EXPECT_EQ(area()->restore(tier_.get(), nullptr).nvm_pages_mended, 2u);
  EXPECT_EQ(line_byte(slot, 7), std::byte{0x33});
}

TEST_F(DoubleWriteAreaTest, TheRingSyncsTheSsdBeforeOverwritingAnUnsyncedSsdEntry) {
  int syncs = 0;
  auto ring = area(&syncs);
  ring->restore(nullptr, nullptr);
  std::vector<std::byte> page(kPageSize, std::byte{0x55});
  // Two whole pages fit the ring; the third overwrites the first, which must be synced first.
  ring->stage_ssd_page(1, 10, page.data());
  ring->stage_ssd_page(2, 10, page.data());
  EXPECT_EQ(syncs, 0);
  ring->stage_ssd_page(3, 10, page.data());
  EXPECT_EQ(syncs, 1);
  // After a sync its entries are retired: overwriting them needs no sync.
  ring->ssd_synced();
  ring->stage_ssd_page(4, 10, page.data());  // after page 3's entry
  ring->stage_ssd_page(5, 10, page.data());  // over page 3's, synced
  EXPECT_EQ(syncs, 1);
  ring->stage_ssd_page(6, 10, page.data());  // over page 4's, not synced
  EXPECT_EQ(syncs, 2);
  // That sync retired pages 4 and 5; page 6 is staged and not synced: restore sees it
  // (without an SSD file it only retires it).
  EXPECT_EQ(area()->restore(nullptr, nullptr).entries_found, 1u);
  EXPECT_EQ(area()->restore(nullptr, nullptr).entries_found, 0u);
}

}  // namespace
}  // namespace tristore
