#include "ssd/superblock.hpp"

#include <cstring>

#include "common/checksum.hpp"
#include "common/error.hpp"

namespace tristore {

std::uint32_t Superblock::compute_checksum() const {
  Superblock copy = *this;
  copy.checksum = 0;
  return crc32c(&copy, sizeof(copy));
}

SuperblockState decode_superblock(std::span<const std::byte> bytes, Superblock& out) {
  if (bytes.size() < sizeof(Superblock)) return SuperblockState::kBadMagic;
  std::memcpy(&out, bytes.data(), sizeof(Superblock));
  if (out.magic != Superblock::kMagic) return SuperblockState::kBadMagic;
  if (out.checksum != out.compute_checksum()) return SuperblockState::kBadChecksum;
  return SuperblockState::kValid;
}

void check_superblock(const Superblock& superblock, std::uint64_t actual_file_size,
                      const std::string& path) {
  // 1. Format: a newer or older on-disk format is refused, never guessed at.
  if (superblock.version != Superblock::kVersion)
    fail("SSD file {} has format version {}, this build reads version {}", path, superblock.version,
         Superblock::kVersion);
  if (superblock.page_size != kPageSize)
    fail("SSD file {} has {}-byte pages, this build uses {}", path, superblock.page_size,
         kPageSize);
  // 2. Layout: the stored geometry must be the one its size implies.
  SsdLayout expected = SsdLayout::for_size(superblock.size_bytes);
  if (expected.page_capacity == 0 || expected.page_capacity != superblock.page_capacity ||
      expected.bitmap_pages != superblock.bitmap_pages ||
      expected.file_size() != superblock.file_size)
    fail("SSD file {} has an inconsistent superblock (size {} bytes, {} pages, {} bitmap pages)",
         path, superblock.size_bytes, superblock.page_capacity, superblock.bitmap_pages);
  // 3. The file must still hold every page the superblock promises.
  if (actual_file_size != superblock.file_size)
    fail("SSD file {} is {} bytes but its superblock says {} bytes ({})", path, actual_file_size,
         superblock.file_size, actual_file_size < superblock.file_size ? "truncated" : "extended");
}

}  // namespace tristore
