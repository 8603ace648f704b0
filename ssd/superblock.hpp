#pragma once
// One 4 KiB superblock copy: identity and layout of an SSD page file, the generation of the
// allocation bitmap it vouches for, and the engine's metadata. Two copies live in page 0;
// generation g is written to copy g % 2, so a torn write only ever hits the older state.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ssd/ssd_layout.hpp"

namespace tristore {

struct Superblock {
  static constexpr std::uint64_t kMagic =
      0x3130'4453'5349'5254;  // "TRISSD01" read as little-endian
  // 2: the superblock names the architecture that created the file. 3: each bitmap copy
  // holds the claims of new pages beside the allocation bits.
  static constexpr std::uint32_t kVersion = 3;
  static constexpr std::size_t kMetadataOffset = 2048;
  static constexpr std::size_t kMetadataSize = 2048;
  static constexpr std::size_t kArchitectureNameBytes = 16;

  std::uint64_t magic = kMagic;
  std::uint32_t version = kVersion;
  std::uint32_t page_size = kPageSize;
  std::uint64_t size_bytes = 0;
  std::uint64_t page_capacity = 0;
  std::uint64_t bitmap_pages = 0;
  std::uint64_t file_size = 0;
  std::uint64_t database_id = 0;
  std::uint64_t generation = 0;
  std::uint32_t bitmap_checksum = 0;  // crc32c of this generation's bitmap copy
  std::uint32_t checksum = 0;         // crc32c of the 4 KiB copy with this field zeroed
  // The engine's architecture ("3tier", "ssd-bm"), NUL-padded: opening the file as another
  // would miss the pages it keeps elsewhere.
  char architecture[kArchitectureNameBytes] = {};
  std::byte reserved[kMetadataOffset - 72 - kArchitectureNameBytes] = {};
  std::byte metadata[kMetadataSize] = {};

  SsdLayout layout() const { return {size_bytes, page_capacity, bitmap_pages}; }
  unsigned copy() const { return static_cast<unsigned>(generation % 2); }
  std::uint32_t compute_checksum() const;
  void seal() { checksum = compute_checksum(); }
};
static_assert(sizeof(Superblock) == SsdLayout::kSuperblockCopySize);
static_assert(offsetof(Superblock, metadata) == Superblock::kMetadataOffset);

enum class SuperblockState { kValid, kBadMagic, kBadChecksum };

// Reads one copy from raw bytes (any alignment) and says whether it can be trusted.
SuperblockState decode_superblock(std::span<const std::byte> bytes, Superblock& out);

// Checks that a valid (checksummed) superblock describes a file this build can use, of the
// given size: version, page size, layout. Throws Error naming `path` otherwise.
void check_superblock(const Superblock& superblock, std::uint64_t actual_file_size,
                      const std::string& path);

}  // namespace tristore
