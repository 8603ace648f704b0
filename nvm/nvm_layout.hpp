#pragma once
// Where things live in the NVM file:
//   [superblock 4 KiB: fields below, then a 2 KiB metadata area for the engine (catalog roots)]
//   [log area: log_bytes, a multiple of 4 KiB]
//   [slot headers: one 64 B line (two versions) per slot, padded to 4 KiB]
//   [slots: 16 KiB each, 4 KiB aligned]
#include <cstddef>
#include <cstdint>

#include "common/checksum.hpp"
#include "common/types.hpp"
#include "nvm/nvm_slot_header.hpp"

namespace tristore {

inline constexpr std::uint64_t kNvmMagic = 0x314d564e45525453ull;  // "STRENVM1"
// 2: two-version slot header lines (version 1 rewrote one version in place; it could tear).
// 3: the superblock names the architecture that formatted the file; slot headers carry a page
//    checksum and mirror each update into both versions.
// 4: page checksums XOR per-line crc32c (nvm/nvm_page_checksum.hpp); the log area ends in the
//    double-write area of the buffered architectures.
inline constexpr std::uint32_t kNvmFormatVersion = 4;
inline constexpr std::uint64_t kNvmSuperblockBytes = 4096;
inline constexpr std::uint64_t kNvmMetadataOffset = 2048;
inline constexpr std::uint64_t kNvmMetadataBytes = 2048;
inline constexpr std::uint64_t kNvmAlignment = 4096;
inline constexpr std::size_t kNvmArchitectureNameBytes = 16;

struct NvmSuperblock {
  std::uint64_t magic;
  std::uint32_t format_version;
  std::uint32_t page_size;
  std::uint64_t slot_count;
  std::uint64_t log_bytes;
  std::uint64_t database_id;
  std::uint64_t file_bytes;
  // The engine's architecture ("3tier", "ssd-bm", ...), NUL-padded: each reads the file its
  // own way, so opening it as another would misread it.
  char architecture[kNvmArchitectureNameBytes];
  std::uint32_t checksum;  // crc32c of this struct with this field zero
  std::uint32_t reserved;

  std::uint32_t compute_checksum() const;
};
static_assert(sizeof(NvmSuperblock) <= kNvmMetadataOffset);

inline constexpr std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Offsets derived from slot count and log size; the same function for create and open.
struct NvmLayout {
  std::uint64_t log_offset;
  std::uint64_t log_bytes;
  std::uint64_t headers_offset;
  std::uint64_t slots_offset;
  std::uint64_t slot_count;
  std::uint64_t end;  // bytes the layout needs

  static NvmLayout compute(std::uint64_t slot_count, std::uint64_t log_bytes) {
    NvmLayout layout{};
    layout.log_offset = kNvmSuperblockBytes;
    layout.log_bytes = log_bytes;
    layout.headers_offset = layout.log_offset + log_bytes;
    layout.slots_offset =
        layout.headers_offset + align_up(slot_count * sizeof(NvmSlotHeaderLine), kNvmAlignment);
    layout.slot_count = slot_count;
    layout.end = layout.slots_offset + slot_count * kPageSize;
    return layout;
  }
  // The most slots that fit in file_bytes beside a log of log_bytes (0 if none fits).
  static std::uint64_t max_slots(std::uint64_t file_bytes, std::uint64_t log_bytes);
};

}  // namespace tristore
