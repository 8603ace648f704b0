#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "nvm/nvm_tier.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using testing_support::test_seed;

class NvmTierCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/dev/shm/tristore-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".nvm";
    image_path_ = path_ + ".crash";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    std::remove(image_path_.c_str());
  }

  NvmTierOptions options(bool crash_simulation) const {
    NvmTierOptions o;
    o.device.path = path_;
    o.device.size_bytes = 1 << 20;
    o.device.crash_simulation = crash_simulation;
    o.log_bytes = 64 << 10;
    o.database_id = 99;
    return o;
  }
  NvmTierOptions image_options() const {
    NvmTierOptions o;
    o.device.path = image_path_;
    o.database_id = 99;
    return o;
  }

  void write_image(const std::vector<std::byte>& image) const {
    std::ofstream file(image_path_, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(image.data()),
               static_cast<std::streamsize>(image.size()));
  }

  std::string path_;
  std::string image_path_;
};

// The k-th of a chain of updates to one slot's header: occupy, new LSN, dirty flag, free,
// occupy by another page..., so both places of the line and every field get torn.
NvmSlotHeader update(std::uint32_t k) {
  NvmSlotHeader header;
  if (k % 4 == 3) return header;  // free
  header.page_id = 1000 + k / 2;
  header.lsn = 10 * k;
  header.flags = k % 2 == 0 ? NvmSlotHeader::kDirtyVsSsd : 0;
  return header;
}

bool same_content(const NvmSlotHeader& a, const NvmSlotHeader& b) {
  return a.page_id == b.page_id && a.lsn == b.lsn && a.flags == b.flags;
}

TEST_F(NvmTierCrashTest, HeaderRewriteTornAtEverySubsetOfWordsOpensAsTheOldOrTheNewHeader) {
  constexpr SlotId kSlot = 5;
  for (std::uint32_t k = 1; k <= 12; ++k) {
    SCOPED_TRACE("update " + std::to_string(k));
    // 1. Updates 1..k-1 durable, update k cut by a crash at its fence.
    auto tier = NvmTier::create(options(true));
    for (std::uint32_t i = 1; i < k; ++i) {
      const NvmSlotHeader h = update(i);
      tier->write_header(kSlot, h.page_id, h.lsn, h.dirty_vs_ssd());
    }
    const NvmSlotHeader old_header = tier->header(kSlot);
    const NvmSlotHeader new_header = update(k);
    CrashSimulator* crash = tier->device().crash_simulator();
    crash->arm_crash_at_fence(1);
    EXPECT_THROW(
        tier->write_header(kSlot, new_header.page_id, new_header.lsn, new_header.dirty_vs_ssd()),
        SimulatedCrash);
    // 2. The words the update changed: all inside the version it wrote.
    const std::vector<std::byte>& durable = crash->durable_image();
    const std::byte* working = tier->device().base();
    std::vector<std::uint64_t> torn_words;
    for (std::uint64_t offset = 0; offset + 8 <= durable.size(); offset += 8)
      if (std::memcmp(durable.data() + offset, working + offset, 8) != 0)
        torn_words.push_back(offset);
    ASSERT_GE(torn_words.size(), 2u);  // sequence and checksum change at least
    ASSERT_LE(torn_words.size(), 4u);
    const std::uint64_t line =
        tier->layout().headers_offset + std::uint64_t{kSlot} * sizeof(NvmSlotHeaderLine);
    for (std::uint64_t offset : torn_words) {
      ASSERT_GE(offset, line);
      ASSERT_LT(offset, line + sizeof(NvmSlotHeaderLine));
    }
    // 3. Every subset of them survives: old or new header, never a free or rejected slot.
    int old_seen = 0, new_seen = 0;
    for (std::uint32_t subset = 0; subset < (1u << torn_words.size()); ++subset) {
      std::vector<std::byte> image = durable;
      for (std::size_t w = 0; w < torn_words.size(); ++w)
        if (subset & (1u << w))
          std::memcpy(image.data() + torn_words[w], working + torn_words[w], 8);
      write_image(image);
      auto reopened = NvmTier::open(image_options());
      const NvmSlotHeader& header = reopened->header(kSlot);
      ASSERT_TRUE(reopened->header_valid(kSlot));
      if (same_content(header, old_header)) {
        ++old_seen;
      } else {
        ASSERT_TRUE(same_content(header, new_header))
            << "subset " << subset << ": page " << header.page_id << " lsn " << header.lsn;
        ++new_seen;
      }
      EXPECT_EQ(reopened->slots_in_use(), header.is_free() ? 0u : 1u);
    }
    EXPECT_EQ(new_seen, 1) << "only the whole new version is valid";
    EXPECT_EQ(old_seen + new_seen, 1 << torn_words.size());
  }
}

TEST_F(NvmTierCrashTest, HeaderWriteCutByACrashOpensAsTheOldOrTheNewHeaderForRandomImages) {
  auto tier = NvmTier::create(options(true));
  const SlotId id = *tier->allocate_slot();
  tier->write_header(id, 1, 100, false);
  CrashSimulator* crash = tier->device().crash_simulator();
  crash->arm_crash_at_fence(1);
  EXPECT_THROW(tier->write_header(id, 2, 200, true), SimulatedCrash);

  const std::uint64_t base_seed = test_seed();
  int old_seen = 0, new_seen = 0;
  for (std::uint64_t i = 0; i < 64; ++i) {
    crash->write_crash_image(base_seed + i, image_path_);
    auto reopened = NvmTier::open(image_options());
    const NvmSlotHeader& header = reopened->header(id);
    ASSERT_TRUE(reopened->header_valid(id));
    ASSERT_EQ(reopened->slots_in_use(), 1u) << "seed " << base_seed + i;
    if (header.page_id == 1) {
      ++old_seen;
      EXPECT_EQ(header.lsn, 100u);
      EXPECT_FALSE(header.dirty_vs_ssd());
    } else {
      ++new_seen;
      EXPECT_EQ(header.page_id, 2u);
      EXPECT_EQ(header.lsn, 200u);
      EXPECT_TRUE(header.dirty_vs_ssd());
    }
  }
  // Four words differ: 1/16 of the images hold the whole new version.
  EXPECT_GT(old_seen, 0);
}

TEST_F(NvmTierCrashTest, FreeingManySlotsCutByACrashLeavesEachOldOrFree) {
  auto tier = NvmTier::create(options(true));
  std::vector<SlotId> ids;
  for (PageId page = 0; page < 16; ++page) {
    ids.push_back(*tier->allocate_slot());
    tier->write_header(ids.back(), 500 + page, page, true);
  }
  CrashSimulator* crash = tier->device().crash_simulator();
  crash->arm_crash_at_fence(1);
  EXPECT_THROW(tier->free_slots(ids), SimulatedCrash);
  const std::uint64_t base_seed = test_seed();
  int freed = 0, kept = 0;
  for (std::uint64_t i = 0; i < 16; ++i) {
    crash->write_crash_image(base_seed + i, image_path_);
    auto reopened = NvmTier::open(image_options());
    for (std::size_t p = 0; p < ids.size(); ++p) {
      const NvmSlotHeader& header = reopened->header(ids[p]);
      if (header.is_free()) {
        ++freed;
      } else {
        ++kept;
        EXPECT_EQ(header.page_id, 500 + p) << "seed " << base_seed + i;
      }
    }
  }
  EXPECT_GT(kept, 0);
}

TEST_F(NvmTierCrashTest, PersistedHeadersSurviveEveryCrashImage) {
  auto tier = NvmTier::create(options(true));
  for (PageId page = 0; page < 20; ++page)
    tier->write_header(*tier->allocate_slot(), page, page, true);
  // Unpersisted scribbles in slot content must not disturb the headers.
  std::memset(tier->slot(30), 0xAB, kPageSize);
  const std::uint64_t base_seed = test_seed();
  for (std::uint64_t i = 0; i < 20; ++i) {
    tier->device().crash_simulator()->write_crash_image(base_seed + i, image_path_);
    auto reopened = NvmTier::open(image_options());
    ASSERT_EQ(reopened->slots_in_use(), 20u);
    for (SlotId id = 0; id < 20; ++id) {
      ASSERT_TRUE(reopened->header_valid(id));
      ASSERT_EQ(reopened->header(id).page_id, id);
    }
  }
}

TEST_F(NvmTierCrashTest, SuperblockRewriteCutByACrashOpensWholeOrIsRejected) {
  NvmTierOptions o = options(true);
  auto tier = NvmTier::create(o);
  CrashSimulator* crash = tier->device().crash_simulator();
  // A new database id and checksum, crashed before they become durable.
  NvmSuperblock superblock{};
  std::memcpy(&superblock, tier->device().base(), sizeof(superblock));
  superblock.database_id = 77;
  superblock.checksum = superblock.compute_checksum();
  std::memcpy(tier->device().base(), &superblock, sizeof(superblock));
  crash->arm_crash_at_fence(1);
  EXPECT_THROW(tier->device().persist(tier->device().base(), sizeof(superblock)), SimulatedCrash);

  int opened = 0, rejected = 0;
  const std::uint64_t base_seed = test_seed();
  for (std::uint64_t i = 0; i < 32; ++i) {
    crash->write_crash_image(base_seed + i, image_path_);
    NvmTierOptions any = image_options();
    any.database_id = 0;
    try {
      auto reopened = NvmTier::open(any);
      ++opened;
      EXPECT_TRUE(reopened->database_id() == 99 || reopened->database_id() == 77);
    } catch (const Error& error) {
      ++rejected;
      EXPECT_NE(std::string(error.what()).find("corrupt superblock"), std::string::npos)
          << error.what();
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(opened, 0);
}

TEST_F(NvmTierCrashTest, HeadersPersistedBeforeKillMinusNineSurvive) {
  { NvmTier::create(options(false)); }
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    NvmTierOptions o = options(false);
    o.device.size_bytes = 0;
    auto tier = NvmTier::open(o);
    for (PageId page = 0;; ++page) {
      auto id = tier->allocate_slot();
      if (!id) {
        tier->free_slot(0);
        id = 0;
      }
      tier->write_header(*id, page, page, false);
      if (page == 40) {
        char byte = 1;
        if (::write(ready[1], &byte, 1) != 1) ::_exit(2);
      }
    }
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(testing_support::killed_by_sigkill(status))
      << "the child ended on its own: " << testing_support::how_child_ended(status);

  NvmTierOptions o = options(false);
  o.device.size_bytes = 0;
  auto tier = NvmTier::open(o);
  EXPECT_GE(tier->slots_in_use(), 40u);
  // The kill may land between the stores of the header being written: that leaves its old
  // version, so every header is intact.
  for (SlotId id = 0; id < tier->slot_count(); ++id) ASSERT_TRUE(tier->header_valid(id));
}

}  // namespace
}  // namespace tristore
