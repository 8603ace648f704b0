// Opening an SSD page file validates it: foreign, corrupt, truncated, random and future-format
// files are refused with a one-line Error; a torn superblock or bitmap falls back to the
// previous generation.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "common/checksum.hpp"
#include "ssd/ssd_layout.hpp"
#include "ssd/ssd_page_file.hpp"
#include "ssd/superblock.hpp"
#include "tests/test_support.hpp"

using namespace tristore;
using testing_support::TempDir;
using testing_support::test_seed;

namespace {

constexpr std::uint64_t kSize = 32 * kPageSize;
constexpr SsdLayout kLayout = SsdLayout::for_size(kSize);

void poke(const std::string& path, std::uint64_t offset, const void* bytes, std::size_t length) {
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes, length, static_cast<off_t>(offset)), static_cast<ssize_t>(length));
  ::close(fd);
}

Superblock read_copy(const std::string& path, unsigned copy) {
  Superblock superblock;
  int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::pread(fd, &superblock, sizeof(superblock),
                    static_cast<off_t>(kLayout.superblock_offset(copy))),
            static_cast<ssize_t>(sizeof(superblock)));
  ::close(fd);
  return superblock;
}

void write_copy(const std::string& path, unsigned copy, const Superblock& superblock) {
  poke(path, kLayout.superblock_offset(copy), &superblock, sizeof(superblock));
}

class SsdSuperblock : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.path = (dir_.path / "a.ssd").string();
    options_.size_bytes = kSize;
    options_.create = true;
    auto file = SsdPageFile::create(options_);
    database_id_ = file->database_id();
    options_.create = false;
  }

  std::string open_error() {
    try {
      SsdPageFile::open(options_);
    } catch (const ChecksumMismatch& error) {
      return std::string("unexpected ChecksumMismatch: ") + error.what();
    } catch (const Error& error) {
      std::string message = error.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
      return message;
    }
    return "(opened)";
  }

  // Three generations on disk: gen 2 (copy 0) holds one page, gen 3 (copy 1) two pages.
  void make_two_generations() {
    auto file = SsdPageFile::open(options_);
    file->allocate();
    file->metadata()[0] = std::byte{2};
    file->sync();
    file->allocate();
    file->metadata()[0] = std::byte{3};
    file->sync();
  }

  TempDir dir_;
  SsdOptions options_;
  std::uint64_t database_id_ = 0;
};

}  // namespace

TEST_F(SsdSuperblock, FreshFileOpensWithItsDatabaseId) {
  options_.database_id = database_id_;
  options_.size_bytes = kSize;
  auto file = SsdPageFile::open(options_);
  EXPECT_EQ(file->database_id(), database_id_);
  EXPECT_EQ(file->page_capacity(), kLayout.page_capacity);
  options_.size_bytes = 0;
  options_.database_id = 0;
  file.reset();
  EXPECT_NO_THROW(SsdPageFile::open(options_)) << "zeros mean: accept what the file says";
}

TEST_F(SsdSuperblock, CreateKeepsAGivenDatabaseId) {
  options_.create = true;
  options_.database_id = 0x1234;
  EXPECT_EQ(SsdPageFile::create(options_)->database_id(), 0x1234u);
}

TEST_F(SsdSuperblock, ForeignDatabaseIsRefused) {
  options_.database_id = database_id_ ^ 1;
  EXPECT_NE(open_error().find("belongs to another database"), std::string::npos) << open_error();
}

TEST_F(SsdSuperblock, SizeOtherThanCreatedIsRefused) {
  options_.size_bytes = 2 * kSize;
  EXPECT_NE(open_error().find("was created with"), std::string::npos) << open_error();
}

TEST_F(SsdSuperblock, MissingFileIsRefused) {
  options_.path += ".missing";
  EXPECT_NE(open_error().find("does not exist"), std::string::npos) << open_error();
}

TEST_F(SsdSuperblock, TruncatedFileIsRefused) {
  std::filesystem::resize_file(options_.path, kSize - kPageSize);
  EXPECT_NE(open_error().find("truncated"), std::string::npos) << open_error();
  std::filesystem::resize_file(options_.path, 1000);
  EXPECT_NE(open_error().find("too short for a superblock"), std::string::npos) << open_error();
  std::filesystem::resize_file(options_.path, 0);
  EXPECT_NE(open_error().find("too short for a superblock"), std::string::npos) << open_error();
}

TEST_F(SsdSuperblock, ExtendedFileIsRefused) {
  std::filesystem::resize_file(options_.path, kSize + kPageSize);
  EXPECT_NE(open_error().find("extended"), std::string::npos) << open_error();
}

TEST_F(SsdSuperblock, RandomFilesAreRefusedAsNotTristore) {
  std::mt19937_64 random(test_seed());
  for (std::size_t size : {std::size_t{kPageSize}, std::size_t{kSize}, std::size_t{1} << 20}) {
    std::vector<char> bytes(size);
    for (auto& b : bytes) b = static_cast<char>(random());
    std::ofstream(options_.path, std::ios::binary | std::ios::trunc).write(bytes.data(), size);
    EXPECT_NE(open_error().find("not a tristore SSD file"), std::string::npos) << open_error();
  }
}

TEST_F(SsdSuperblock, RandomBytesAfterAValidMagicAreRefusedAsCorrupt) {
  std::mt19937_64 random(test_seed());
  for (unsigned copy = 0; copy < 2; ++copy) {
    std::vector<std::byte> bytes(sizeof(Superblock));
    for (auto& b : bytes) b = static_cast<std::byte>(random());
    std::memcpy(bytes.data(), &Superblock::kMagic, sizeof(Superblock::kMagic));
    poke(options_.path, kLayout.superblock_offset(copy), bytes.data(), bytes.size());
  }
  EXPECT_NE(open_error().find("both superblock copies fail their checksum"), std::string::npos)
      << open_error();
}

TEST_F(SsdSuperblock, OneCorruptCopyFallsBackToTheOtherGeneration) {
  make_two_generations();
  std::byte flip{0x5A};
  poke(options_.path, kLayout.superblock_offset(1) + 100, &flip, 1);  // tears generation 3
  auto file = SsdPageFile::open(options_);
  EXPECT_EQ(file->pages_in_use(), 1u) << "generation 2's bitmap";
  EXPECT_EQ(file->metadata()[0], std::byte{2});
  file->allocate();
  file->sync();  // generation 3 again, rewriting the torn copy
  file.reset();
  file = SsdPageFile::open(options_);
  EXPECT_EQ(file->pages_in_use(), 2u);
}

TEST_F(SsdSuperblock, TornBitmapOfNewestGenerationFallsBackToTheOlder) {
  make_two_generations();
  // Generation 3's bitmap (copy 1) no longer matches the checksum its superblock vouches for.
  std::byte garbage{0xFF};
  poke(options_.path, kLayout.bitmap_offset(1) + 17, &garbage, 1);
  auto file = SsdPageFile::open(options_);
  EXPECT_EQ(file->pages_in_use(), 1u);
  EXPECT_EQ(file->metadata()[0], std::byte{2});
}

// The caller's witness of the newest completed sync (SsdOptions::durable_generation) tells a
// copy a crash cut short (fall back) from one damaged after its sync returned (Error).
TEST_F(SsdSuperblock, DamagedNewestCopyFallsBackOnlyBelowTheDurableGeneration) {
  std::vector<std::uint64_t> reported;
  options_.on_generation_durable = [&](std::uint64_t generation) {
    reported.push_back(generation);
  };
  make_two_generations();
  EXPECT_EQ(reported, (std::vector<std::uint64_t>{2, 3}));
  options_.on_generation_durable = {};
  std::byte flip{0x5A};
  poke(options_.path, kLayout.superblock_offset(1) + 100, &flip, 1);
  options_.durable_generation = 2;  // generation 3's sync never returned: a torn write
  EXPECT_EQ(SsdPageFile::open(options_)->pages_in_use(), 1u);
  options_.durable_generation = 3;  // it did: generation 2 misses an allocation
  const std::string message = open_error();
  EXPECT_NE(message.find("generation 3"), std::string::npos) << message;
  EXPECT_NE(message.find("is corrupt"), std::string::npos) << message;
}

TEST_F(SsdSuperblock, DamagedNewestBitmapFallsBackOnlyBelowTheDurableGeneration) {
  make_two_generations();
  std::byte garbage{0xFF};
  poke(options_.path, kLayout.bitmap_offset(1) + 17, &garbage, 1);
  options_.durable_generation = 2;
  EXPECT_EQ(SsdPageFile::open(options_)->pages_in_use(), 1u);
  options_.durable_generation = 3;
  EXPECT_NE(open_error().find("is corrupt"), std::string::npos) << open_error();
}

TEST_F(SsdSuperblock, BothBitmapsCorruptIsRefused) {
  make_two_generations();
  std::byte garbage{0xFF};
  poke(options_.path, kLayout.bitmap_offset(0) + 17, &garbage, 1);
  poke(options_.path, kLayout.bitmap_offset(1) + 17, &garbage, 1);
  EXPECT_NE(open_error().find("allocation bitmap"), std::string::npos) << open_error();
}

TEST_F(SsdSuperblock, OtherFormatVersionIsRefused) {
  // 1: no architecture in the superblock; kVersion + 1: a newer build's.
  for (std::uint32_t version : {1u, Superblock::kVersion + 1}) {
    for (unsigned copy = 0; copy < 2; ++copy) {
      Superblock superblock = read_copy(options_.path, copy);
      superblock.version = version;
      superblock.seal();
      write_copy(options_.path, copy, superblock);
    }
    EXPECT_NE(open_error().find(fmt::format("has format version {}, this build reads version {}",
                                            version, Superblock::kVersion)),
              std::string::npos)
        << open_error();
  }
}

TEST_F(SsdSuperblock, TheArchitectureIsRecordedAndAnotherIsRefused) {
  options_.create = true;
  options_.architecture = "3tier";
  SsdPageFile::create(options_).reset();
  options_.create = false;
  EXPECT_EQ(std::string(read_copy(options_.path, 0).architecture), "3tier");
  EXPECT_EQ(std::string(read_copy(options_.path, 1).architecture), "3tier");
  options_.architecture = "ssd-bm";
  EXPECT_NE(open_error().find("holds a 3tier database, not ssd-bm"), std::string::npos)
      << open_error();
  options_.architecture = "3tier";
  EXPECT_NO_THROW(SsdPageFile::open(options_));
  options_.architecture = "";
  EXPECT_NO_THROW(SsdPageFile::open(options_)) << "no architecture asked for: any";
}

TEST_F(SsdSuperblock, OtherPageSizeIsRefused) {
  for (unsigned copy = 0; copy < 2; ++copy) {
    Superblock superblock = read_copy(options_.path, copy);
    superblock.page_size = 4096;
    superblock.seal();
    write_copy(options_.path, copy, superblock);
  }
  EXPECT_NE(open_error().find("4096-byte pages"), std::string::npos) << open_error();
}

TEST_F(SsdSuperblock, InconsistentGeometryIsRefused) {
  for (unsigned copy = 0; copy < 2; ++copy) {
    Superblock superblock = read_copy(options_.path, copy);
    superblock.page_capacity += 1;
    superblock.seal();
    write_copy(options_.path, copy, superblock);
  }
  EXPECT_NE(open_error().find("inconsistent superblock"), std::string::npos) << open_error();
}

// Both bitmap copies replaced by `bitmap`, checksummed as if written so.
void write_both_bitmaps(const std::string& path, const std::vector<std::byte>& bitmap) {
  for (unsigned copy = 0; copy < 2; ++copy) {
    Superblock superblock = read_copy(path, copy);
    poke(path, kLayout.bitmap_offset(copy), bitmap.data(), bitmap.size());
    superblock.bitmap_checksum = crc32c(bitmap.data(), bitmap.size());
    superblock.seal();
    write_copy(path, copy, superblock);
  }
}

TEST_F(SsdSuperblock, BitmapWithBitsPastCapacityIsRefused) {
  // A checksummed bitmap that allocates or claims pages the file does not have is corrupt, not
  // trusted: in either half of the copy.
  for (const std::uint64_t last_byte :
       {kLayout.claims_offset_in_copy() - 1, kLayout.bitmap_bytes() - 1}) {
    SCOPED_TRACE(last_byte);
    std::vector<std::byte> bitmap(kLayout.bitmap_bytes());
    bitmap[last_byte] = std::byte{0x80};
    write_both_bitmaps(options_.path, bitmap);
    EXPECT_NE(open_error().find("allocation bitmap"), std::string::npos) << open_error();
  }
}

TEST_F(SsdSuperblock, ClaimOfAnUnallocatedPageIsRefused) {
  std::vector<std::byte> bitmap(kLayout.bitmap_bytes());
  bitmap[0] = std::byte{0x01};                                // page 0 allocated
  bitmap[kLayout.claims_offset_in_copy()] = std::byte{0x03};  // pages 0 and 1 claimed
  write_both_bitmaps(options_.path, bitmap);
  EXPECT_NE(open_error().find("allocation bitmap"), std::string::npos) << open_error();
  bitmap[kLayout.claims_offset_in_copy()] = std::byte{0x01};
  write_both_bitmaps(options_.path, bitmap);
  EXPECT_EQ(open_error(), "(opened)");
}

TEST_F(SsdSuperblock, DirectoryIsRefused) {
  options_.path = dir_.path.string();
  std::string message = open_error();
  EXPECT_TRUE(message.find("not a regular file") != std::string::npos ||
              message.find("cannot open") != std::string::npos)
      << message;
}
