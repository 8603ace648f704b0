// Pages that come back from SSD different from how they were written: flipped bits, torn
// writes, misdirected writes, pages never written. None may be returned as data.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "common/page_format.hpp"
#include "ssd/ssd_layout.hpp"
#include "ssd/ssd_page_file.hpp"
#include "tests/test_support.hpp"

using namespace tristore;
using testing_support::TempDir;

namespace {

constexpr std::uint64_t kSize = 32 * kPageSize;
constexpr SsdLayout kLayout = SsdLayout::for_size(kSize);

// Writes behind the engine's back, as a failing device or a crash would.
void poke(const std::string& path, std::uint64_t offset, const void* bytes, std::size_t length) {
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes, length, static_cast<off_t>(offset)), static_cast<ssize_t>(length));
  ::close(fd);
}

std::vector<std::byte> peek(const std::string& path, std::uint64_t offset, std::size_t length) {
  std::vector<std::byte> bytes(length);
  int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::pread(fd, bytes.data(), length, static_cast<off_t>(offset)),
            static_cast<ssize_t>(length));
  ::close(fd);
  return bytes;
}

class SsdPageCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    SsdOptions options;
    options.path = (dir_.path / "a.ssd").string();
    options.size_bytes = kSize;
    options.create = true;
    file_ = SsdPageFile::create(options);
    std::mt19937_64 random(5);
    for (auto& b : page_) b = static_cast<std::byte>(random());
    for (int i = 0; i < 4; ++i) file_->write(file_->allocate(), page_.data());
  }

  // Reads `id`, expecting ChecksumMismatch of `kind`; returns its message.
  std::string expect_mismatch(PageId id, ChecksumMismatch::Kind kind) {
    std::vector<std::byte> buffer(kPageSize, std::byte{0x77});
    try {
      file_->read(id, buffer.data());
    } catch (const ChecksumMismatch& mismatch) {
      EXPECT_EQ(mismatch.page_id(), id);
      EXPECT_EQ(mismatch.kind(), kind);
      EXPECT_EQ(buffer, std::vector<std::byte>(kPageSize)) << "failed page handed out as data";
      return mismatch.what();
    }
    ADD_FAILURE() << "read of page " << id << " did not throw ChecksumMismatch";
    return {};
  }

  TempDir dir_;
  std::unique_ptr<SsdPageFile> file_;
  std::vector<std::byte> page_ = std::vector<std::byte>(kPageSize);
};

}  // namespace

TEST_F(SsdPageCorruption, FlippedByteInPageBodyIsChecksumMismatch) {
  std::uint64_t offset = kLayout.page_offset(2) + 9000;
  auto byte = peek(file_->path(), offset, 1);
  byte[0] ^= std::byte{0x10};
  poke(file_->path(), offset, byte.data(), 1);
  std::string message = expect_mismatch(2, ChecksumMismatch::Kind::kBadChecksum);
  EXPECT_NE(message.find("SSD page 2"), std::string::npos) << message;
  EXPECT_NE(message.find("torn or corrupt"), std::string::npos) << message;
  std::vector<std::byte> buffer(kPageSize);
  EXPECT_NO_THROW(file_->read(1, buffer.data())) << "neighbours are unaffected";
  EXPECT_NO_THROW(file_->read(3, buffer.data()));
}

TEST_F(SsdPageCorruption, FlippedByteInEveryHeaderFieldIsDetected) {
  for (std::size_t offset : {offsetof(PageHeader, lsn), offsetof(PageHeader, checksum),
                             offsetof(PageHeader, reserved), std::size_t{kPageSize - 1}}) {
    std::uint64_t at = kLayout.page_offset(1) + offset;
    auto original = peek(file_->path(), at, 1);
    auto flipped = original;
    flipped[0] ^= std::byte{1};
    poke(file_->path(), at, flipped.data(), 1);
    expect_mismatch(1, ChecksumMismatch::Kind::kBadChecksum);
    poke(file_->path(), at, original.data(), 1);
  }
  std::vector<std::byte> buffer(kPageSize);
  EXPECT_NO_THROW(file_->read(1, buffer.data())) << "restored page verifies again";
}

TEST_F(SsdPageCorruption, TornWriteOfNewVersionIsChecksumMismatch) {
  // The device wrote the first 4 KiB sector of the new version, then lost power.
  auto old_version = peek(file_->path(), kLayout.page_offset(0), kPageSize);
  std::vector<std::byte> new_version(page_);
  new_version[5000] = ~new_version[5000];
  new_version[kPageSize - 1] = ~new_version[kPageSize - 1];
  file_->write(0, new_version.data());
  poke(file_->path(), kLayout.page_offset(0) + 4096, old_version.data() + 4096, kPageSize - 4096);
  expect_mismatch(0, ChecksumMismatch::Kind::kBadChecksum);
}

TEST_F(SsdPageCorruption, MisdirectedWriteIsDetectedByPageId) {
  // Page 3's bytes, intact and self-consistent, land where page 1 belongs.
  auto page3 = peek(file_->path(), kLayout.page_offset(3), kPageSize);
  poke(file_->path(), kLayout.page_offset(1), page3.data(), kPageSize);
  std::string message = expect_mismatch(1, ChecksumMismatch::Kind::kWrongPageId);
  EXPECT_NE(message.find("holds page 3"), std::string::npos) << message;
}

TEST_F(SsdPageCorruption, AllocatedButNeverWrittenPageIsReportedAsZeros) {
  PageId fresh = file_->allocate();
  std::string message = expect_mismatch(fresh, ChecksumMismatch::Kind::kBadChecksum);
  EXPECT_NE(message.find("reads as zeros"), std::string::npos) << message;
}

TEST_F(SsdPageCorruption, ChecksumMismatchIsATristoreError) {
  std::uint64_t offset = kLayout.page_offset(2) + 100;
  std::byte garbage[4] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
  poke(file_->path(), offset, garbage, sizeof(garbage));
  std::vector<std::byte> buffer(kPageSize);
  EXPECT_THROW(file_->read(2, buffer.data()), Error);
}

TEST_F(SsdPageCorruption, UnalignedReadOfCorruptPageAlsoThrowsAndZeroes) {
  std::uint64_t offset = kLayout.page_offset(2) + 100;
  std::byte garbage[1] = {std::byte{0xAB}};
  poke(file_->path(), offset, garbage, 1);
  std::vector<std::byte> storage(kPageSize + 1, std::byte{0x55});
  EXPECT_THROW(file_->read(2, storage.data() + 1), ChecksumMismatch);
  for (std::size_t i = 1; i <= kPageSize; ++i) ASSERT_EQ(storage[i], std::byte{0}) << i;
}
