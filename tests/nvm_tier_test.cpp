#include "nvm/nvm_tier.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace tristore {
namespace {

constexpr std::uint64_t kFileBytes = 4 << 20;
constexpr std::uint64_t kLogBytes = 256 << 10;

class NvmTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/dev/shm/tristore-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".nvm";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  NvmTierOptions options(std::uint64_t database_id = 0) const {
    NvmTierOptions o;
    o.device.path = path_;
    o.device.size_bytes = kFileBytes;
    o.log_bytes = kLogBytes;
    o.database_id = database_id;
    return o;
  }
  NvmTierOptions open_options(std::uint64_t database_id = 0) const {
    NvmTierOptions o = options(database_id);
    o.device.size_bytes = 0;
    return o;
  }

  // Opening must fail with an Error whose message contains `expected`.
  void expect_open_error(const std::string& expected, std::uint64_t database_id = 0) {
    try {
      NvmTier::open(open_options(database_id));
      FAIL() << "expected an Error containing '" << expected << "'";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  }

  void patch_file(std::uint64_t offset, const void* bytes, std::size_t length) {
    std::fstream file(path_, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(offset));
    file.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(length));
  }
  void flip_byte(std::uint64_t offset) {
    std::fstream file(path_, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(offset));
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    file.seekp(static_cast<std::streamoff>(offset));
    file.write(&byte, 1);
  }

  std::string path_;
};

TEST_F(NvmTierTest, CreatedTierLaysOutSlotsAlignedAfterLogAndHeaders) {
  auto tier = NvmTier::create(options(42));
  const NvmLayout& layout = tier->layout();
  EXPECT_EQ(tier->database_id(), 42u);
  EXPECT_EQ(layout.log_offset, kNvmSuperblockBytes);
  EXPECT_EQ(tier->log_area().size(), kLogBytes);
  EXPECT_EQ(tier->metadata_area().size(), kNvmMetadataBytes);
  EXPECT_GE(layout.headers_offset, layout.log_offset + kLogBytes);
  EXPECT_GE(layout.slots_offset, layout.headers_offset + tier->slot_count() * 64);
  EXPECT_EQ(layout.slots_offset % 4096, 0u);
  EXPECT_LE(layout.end, kFileBytes);
  // No room left for one more slot.
  EXPECT_GT(NvmLayout::compute(tier->slot_count() + 1, kLogBytes).end, kFileBytes);
  EXPECT_EQ(tier->slots_in_use(), 0u);
  for (SlotId id = 0; id < tier->slot_count(); ++id) {
    EXPECT_TRUE(tier->header_valid(id));
    EXPECT_TRUE(tier->header(id).is_free());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tier->slot(id)) % 4096, 0u);
  }
}

TEST_F(NvmTierTest, SlotAddressesMapBackToSlotIds) {
  auto tier = NvmTier::create(options());
  const SlotId last = static_cast<SlotId>(tier->slot_count() - 1);
  EXPECT_TRUE(tier->in_slot_area(tier->slot(0)));
  EXPECT_TRUE(tier->in_slot_area(tier->slot(last) + kPageSize - 1));
  EXPECT_FALSE(tier->in_slot_area(tier->slot(last) + kPageSize));
  EXPECT_FALSE(tier->in_slot_area(tier->log_area().data()));
  EXPECT_EQ(tier->slot_of(tier->slot(3) + 1000), 3u);
  EXPECT_EQ(tier->slot_of(tier->slot(last)), last);
}

TEST_F(NvmTierTest, RandomDatabaseIdWhenNoneIsGiven) {
  auto tier = NvmTier::create(options(0));
  EXPECT_NE(tier->database_id(), 0u);
}

TEST_F(NvmTierTest, AllocationExhaustsAndFreeingReturnsTheSlot) {
  auto tier = NvmTier::create(options());
  std::set<SlotId> allocated;
  while (auto id = tier->allocate_slot()) EXPECT_TRUE(allocated.insert(*id).second);
  EXPECT_EQ(allocated.size(), tier->slot_count());
  EXPECT_EQ(tier->slots_in_use(), tier->slot_count());
  EXPECT_FALSE(tier->allocate_slot().has_value());
  tier->free_slot(5);
  EXPECT_EQ(tier->allocate_slot(), std::optional<SlotId>(5));
}

TEST_F(NvmTierTest, SlotHeadersAndContentSurviveReopen) {
  std::uint64_t database_id = 0;
  std::vector<SlotId> used;
  {
    auto tier = NvmTier::create(options());
    database_id = tier->database_id();
    for (int i = 0; i < 10; ++i) {
      const SlotId id = *tier->allocate_slot();
      used.push_back(id);
      std::memset(tier->slot(id), 'a' + i, kPageSize);
      tier->device().persist(tier->slot(id), kPageSize);
      tier->write_header(id, 1000 + i, 7 * i, i % 2 == 0);
    }
    tier->free_slot(used[3]);
    std::memcpy(tier->metadata_area().data(), "catalog", 7);
    tier->device().persist(tier->metadata_area().data(), 7);
    std::memcpy(tier->log_area().data(), "log", 3);
    tier->device().persist(tier->log_area().data(), 3);
  }
  auto tier = NvmTier::open(open_options(database_id));
  EXPECT_EQ(tier->database_id(), database_id);
  EXPECT_EQ(tier->slots_in_use(), 9u);
  for (int i = 0; i < 10; ++i) {
    const NvmSlotHeader& header = tier->header(used[i]);
    EXPECT_TRUE(tier->header_valid(used[i]));
    if (i == 3) {
      EXPECT_TRUE(header.is_free());
      continue;
    }
    EXPECT_EQ(header.page_id, 1000u + i);
    EXPECT_EQ(header.lsn, 7u * i);
    EXPECT_EQ(header.dirty_vs_ssd(), i % 2 == 0);
    EXPECT_EQ(tier->slot(used[i])[kPageSize - 1], std::byte('a' + i));
  }
  EXPECT_EQ(std::memcmp(tier->metadata_area().data(), "catalog", 7), 0);
  EXPECT_EQ(std::memcmp(tier->log_area().data(), "log", 3), 0);
  // Rebuilt free list hands out only free slots, the freed one among them.
  std::set<SlotId> handed_out;
  while (auto id = tier->allocate_slot()) {
    EXPECT_TRUE(tier->header(*id).is_free()) << "slot " << *id << " is in use";
    handed_out.insert(*id);
  }
  EXPECT_EQ(handed_out.size(), tier->slot_count() - 9);
  EXPECT_TRUE(handed_out.count(used[3]));
}

TEST_F(NvmTierTest, WriteHeaderPersistsAndCountsTheLine) {
  auto tier = NvmTier::create(options());
  const Counters before = tier->device().counters();
  tier->write_header(0, 9, 9, true);
  EXPECT_EQ((tier->device().counters() - before).nvm_lines_written, 1u)
      << "the mirror rewrites the same line: counted once";
}

TEST_F(NvmTierTest, HeaderUpdateWritesTheNewestPlaceFirstThenMirrorsItIntoTheOther) {
  auto tier = NvmTier::create(options());
  const auto* line = reinterpret_cast<const NvmSlotHeaderLine*>(tier->device().base() +
                                                                tier->layout().headers_offset);
  // A fresh slot: sequence 0 in place 0, 1 (the newest) in place 1.
  tier->write_header(0, 5, 50, true);
  EXPECT_EQ(line->versions[1].sequence, 3u) << "first into the newest place";
  EXPECT_EQ(line->versions[0].sequence, 4u) << "then the mirror";
  for (const NvmSlotHeaderVersion& version : line->versions) {
    EXPECT_EQ(version.page_id, 5u);
    EXPECT_EQ(version.lsn, 50u);
  }
  tier->write_header(0, 6, 60, false);
  EXPECT_EQ(line->versions[0].sequence, 6u);
  EXPECT_EQ(line->versions[1].sequence, 7u);
  EXPECT_EQ(line->versions[0].page_id, 6u);
  EXPECT_EQ(line->versions[1].page_id, 6u);
  EXPECT_EQ(tier->header(0).page_id, 6u);
  EXPECT_EQ(tier->header(0).sequence, 7u);
  EXPECT_TRUE(tier->header_valid(0));
  EXPECT_TRUE(line->mirrored(0));
}

TEST_F(NvmTierTest, HeaderMirrorIsWhatTheFileSaysAfterReopen) {
  std::vector<NvmSlotHeader> written;
  {
    auto tier = NvmTier::create(options(7));
    for (SlotId id = 0; id < 10; ++id) {
      for (std::uint32_t round = 0; round <= id; ++round)
        tier->write_header(id, 100 + id + round, round, round % 2 == 0);
      written.push_back(tier->header(id));
    }
  }
  auto tier = NvmTier::open(open_options(7));
  for (SlotId id = 0; id < 10; ++id) {
    EXPECT_EQ(tier->header(id), written[id]) << "slot " << id;
    EXPECT_TRUE(tier->header_valid(id));
  }
}

TEST_F(NvmTierTest, ScribbleOverTheCurrentVersionMakesHeaderValidFalse) {
  auto tier = NvmTier::create(options());
  tier->write_header(3, 33, 1, true);
  EXPECT_TRUE(tier->header_valid(3));
  auto* line =
      reinterpret_cast<NvmSlotHeaderLine*>(tier->device().base() + tier->layout().headers_offset) +
      3;
  line->versions[NvmSlotHeaderLine::place_of(tier->header(3).sequence)].lsn = 2;
  EXPECT_FALSE(tier->header_valid(3));
  EXPECT_EQ(tier->header(3).page_id, 33u) << "the DRAM mirror is unaffected";
}

TEST_F(NvmTierTest, FlippedByteInTheCurrentVersionOpensAsItsMirrorAndIsMended) {
  std::uint64_t current_version_offset = 0;
  {
    auto tier = NvmTier::create(options(7));
    const SlotId id = *tier->allocate_slot();
    tier->write_header(id, 123, 5, true);
    tier->write_header(id, 123, 6, false);
    current_version_offset =
        tier->layout().headers_offset + id * sizeof(NvmSlotHeaderLine) +
        NvmSlotHeaderLine::place_of(tier->header(id).sequence) * sizeof(NvmSlotHeaderVersion);
  }
  flip_byte(current_version_offset + offsetof(NvmSlotHeaderVersion, lsn));
  auto tier = NvmTier::open(open_options(7));
  EXPECT_EQ(tier->header(0).page_id, 123u);
  EXPECT_EQ(tier->header(0).lsn, 6u) << "the mirror says what the damaged version said";
  EXPECT_FALSE(tier->header(0).dirty_vs_ssd());
  EXPECT_EQ(tier->slots_in_use(), 1u);
  const auto* line = reinterpret_cast<const NvmSlotHeaderLine*>(tier->device().base() +
                                                                tier->layout().headers_offset);
  EXPECT_FALSE(line->mirrored(0)) << "open writes nothing";
  tier->mend_header_mirrors();
  EXPECT_TRUE(line->mirrored(0)) << "the mend rewrites the damaged version";
  EXPECT_EQ(tier->header(0).lsn, 6u);
}

// Issue #10: the only update of a slot (free -> in use) was undone by one flipped byte, and
// the slot of a live page was handed out again.
TEST_F(NvmTierTest, FlippedByteInALiveSlotsOnlyUpdateKeepsTheSlotInUse) {
  for (std::size_t byte = 0; byte < sizeof(NvmSlotHeaderVersion); ++byte) {
    SCOPED_TRACE("byte " + std::to_string(byte));
    std::uint64_t current_version_offset = 0;
    {
      auto tier = NvmTier::create(options(7));
      const SlotId id = *tier->allocate_slot();
      tier->write_header(id, id, 0, false);
      current_version_offset =
          tier->layout().headers_offset + id * sizeof(NvmSlotHeaderLine) +
          NvmSlotHeaderLine::place_of(tier->header(id).sequence) * sizeof(NvmSlotHeaderVersion);
    }
    flip_byte(current_version_offset + byte);
    auto tier = NvmTier::open(open_options(7));
    EXPECT_EQ(tier->header(0).page_id, 0u);
    EXPECT_EQ(tier->slots_in_use(), 1u);
    EXPECT_NE(tier->allocate_slot(), std::optional<SlotId>(0)) << "slot 0 handed out again";
  }
}

TEST_F(NvmTierTest, HeaderWithNoIntactVersionIsAnError) {
  std::uint64_t line_offset = 0;
  {
    auto tier = NvmTier::create(options(7));
    tier->write_header(2, 9, 9, true);
    line_offset = tier->layout().headers_offset + 2 * sizeof(NvmSlotHeaderLine);
  }
  for (std::size_t place = 0; place < 2; ++place) {
    const std::uint64_t bad = 0xbad;
    patch_file(line_offset + place * sizeof(NvmSlotHeaderVersion) +
                   offsetof(NvmSlotHeaderVersion, page_id),
               &bad, 8);
  }
  expect_open_error("corrupt header of NVM slot 2");
}

TEST_F(NvmTierTest, HeaderLineOfAnotherSlotIsNotValidHere) {
  const NvmSlotHeaderLine line = NvmSlotHeaderLine::free_slot(4);
  EXPECT_TRUE(line.current(4).has_value());
  EXPECT_FALSE(line.current(5).has_value());
}

TEST_F(NvmTierTest, FreeSlotsPersistsEveryHeaderWithOneFence) {
  NvmTierOptions o = options(7);
  o.device.crash_simulation = true;
  auto tier = NvmTier::create(o);
  std::vector<SlotId> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(*tier->allocate_slot());
    tier->write_header(ids.back(), 10 + i, 1, true);
  }
  const std::uint64_t fences = tier->device().crash_simulator()->fences();
  tier->free_slots(ids);
  EXPECT_EQ(tier->device().crash_simulator()->fences() - fences, 1u);
  EXPECT_EQ(tier->slots_in_use(), 0u);
  for (SlotId id : ids) EXPECT_TRUE(tier->header(id).is_free());
}

TEST_F(NvmTierTest, TooSmallForOneSlotIsAnError) {
  NvmTierOptions o = options();
  o.device.size_bytes = kNvmSuperblockBytes + kLogBytes + kPageSize;  // no room for headers
  try {
    NvmTier::create(o);
    FAIL() << "expected Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("too small"), std::string::npos) << error.what();
  }
  o.device.size_bytes = NvmLayout::compute(1, kLogBytes).end;
  EXPECT_EQ(NvmTier::create(o)->slot_count(), 1u);
}

TEST_F(NvmTierTest, OpeningAnotherDatabasesFileIsAnError) {
  NvmTier::create(options(1111));
  expect_open_error("belongs to database 1111", 2222);
  EXPECT_EQ(NvmTier::open(open_options(1111))->database_id(), 1111u);
  EXPECT_EQ(NvmTier::open(open_options(0))->database_id(), 1111u);
}

TEST_F(NvmTierTest, OpeningATruncatedFileIsAnError) {
  NvmTier::create(options());
  ASSERT_EQ(::truncate(path_.c_str(), kFileBytes - kPageSize), 0);
  expect_open_error("truncated");
}

TEST_F(NvmTierTest, OpeningAnExtendedFileIsAnError) {
  NvmTier::create(options());
  ASSERT_EQ(::truncate(path_.c_str(), kFileBytes + kPageSize), 0);
  expect_open_error("superblock says");
}

TEST_F(NvmTierTest, OpeningWithTheWrongExpectedSizeIsAnError) {
  NvmTier::create(options());
  NvmTierOptions o = open_options();
  o.device.size_bytes = 2 * kFileBytes;
  EXPECT_THROW(NvmTier::open(o), Error);
}

TEST_F(NvmTierTest, OpeningACorruptSuperblockIsAnError) {
  NvmTier::create(options());
  const std::uint64_t bogus_slot_count = 99999;
  patch_file(offsetof(NvmSuperblock, slot_count), &bogus_slot_count, 8);
  expect_open_error("corrupt superblock");
}

TEST_F(NvmTierTest, OpeningAnUnsupportedVersionIsAnError) {
  NvmTier::create(options());
  NvmSuperblock superblock{};
  {
    std::ifstream file(path_, std::ios::binary);
    file.read(reinterpret_cast<char*>(&superblock), sizeof(superblock));
  }
  superblock.format_version = 99;
  superblock.checksum = superblock.compute_checksum();
  patch_file(0, &superblock, sizeof(superblock));
  expect_open_error("version 99");
}

TEST_F(NvmTierTest, OpeningAFileOfAnOlderFormatIsAnErrorNamingTheVersion) {
  // 1: one header version per line, rewritten in place; 2: no architecture in the superblock;
  // 3: page checksums over the page as a whole.
  for (std::uint32_t old_version : {1u, 2u, 3u}) {
    NvmTier::create(options());
    NvmSuperblock superblock{};
    {
      std::ifstream file(path_, std::ios::binary);
      file.read(reinterpret_cast<char*>(&superblock), sizeof(superblock));
    }
    ASSERT_EQ(superblock.format_version, 4u);
    superblock.format_version = old_version;
    superblock.checksum = superblock.compute_checksum();
    patch_file(0, &superblock, sizeof(superblock));
    expect_open_error(
        fmt::format("NVM format version {} is not supported (expected 4)", old_version));
  }
}

TEST_F(NvmTierTest, TheSuperblockNamesTheArchitectureAndOpeningAsAnotherIsAnError) {
  NvmTierOptions created = options();
  created.architecture = "3tier";
  NvmTier::create(created);
  NvmSuperblock superblock{};
  {
    std::ifstream file(path_, std::ios::binary);
    file.read(reinterpret_cast<char*>(&superblock), sizeof(superblock));
  }
  EXPECT_EQ(std::string(superblock.architecture), "3tier");
  NvmTierOptions wrong = open_options();
  wrong.architecture = "ssd-bm";
  try {
    NvmTier::open(wrong);
    FAIL() << "a 3tier file opened as ssd-bm";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("holds a 3tier database, not ssd-bm"),
              std::string::npos)
        << error.what();
  }
  NvmTierOptions right = open_options();
  right.architecture = "3tier";
  EXPECT_NO_THROW(NvmTier::open(right));
  EXPECT_NO_THROW(NvmTier::open(open_options())) << "no architecture asked for: any";
}

TEST_F(NvmTierTest, OpeningARandomFileIsAnError) {
  std::mt19937_64 random(1);
  {
    std::ofstream file(path_, std::ios::binary);
    for (int i = 0; i < 100000; ++i) {
      const std::uint64_t word = random();
      file.write(reinterpret_cast<const char*>(&word), 8);
    }
  }
  expect_open_error("not a tristore NVM file");
}

TEST_F(NvmTierTest, OpeningATinyFileIsAnError) {
  std::ofstream(path_) << "hi";
  expect_open_error("not a tristore NVM file");
}

TEST_F(NvmTierTest, OpeningAMissingFileIsAnError) { expect_open_error("does not exist"); }

}  // namespace
}  // namespace tristore
