#pragma once
// The persisted header of one NVM page slot: one cache line, so it is flushed with one clwb.
// Restart rebuilds the combined page table by scanning these (paper: 100 GB in under 1 s).
#include <cstdint>

#include "common/checksum.hpp"
#include "common/types.hpp"

namespace tristore {

using SlotId = std::uint32_t;

struct alignas(64) NvmSlotHeader {
  static constexpr std::uint32_t kDirtyVsSsd = 1;  // the slot holds changes not yet on SSD

  PageId page_id = kInvalidPageId;  // kInvalidPageId = free slot
  Lsn lsn = 0;
  std::uint32_t flags = 0;
  std::uint32_t checksum = 0;  // crc32c of the header with this field zero
  std::uint8_t reserved[40] = {};

  bool is_free() const { return page_id == kInvalidPageId; }
  bool dirty_vs_ssd() const { return (flags & kDirtyVsSsd) != 0; }

  std::uint32_t compute_checksum() const {
    NvmSlotHeader copy = *this;
    copy.checksum = 0;
    return crc32c(&copy, sizeof(copy));
  }
  // A torn header (8-byte words of an old and a new version) fails this check.
  bool valid() const { return checksum == compute_checksum(); }

  static NvmSlotHeader make(PageId page_id, Lsn lsn, bool dirty_vs_ssd) {
    NvmSlotHeader header;
    header.page_id = page_id;
    header.lsn = lsn;
    header.flags = dirty_vs_ssd ? kDirtyVsSsd : 0;
    header.checksum = header.compute_checksum();
    return header;
  }
};
static_assert(sizeof(NvmSlotHeader) == 64);

}  // namespace tristore
