#pragma once
// The first bytes of every 16 KiB page, whatever tier holds it. The SSD tier checksums the
// page with this header's checksum field zeroed; recovery compares LSNs.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/types.hpp"

namespace tristore {

struct PageHeader {
  PageId page_id;          // detects misdirected writes and pages of another file
  Lsn lsn;                 // LSN of the last log record applied to this page
  std::uint32_t checksum;  // crc32c of the page, computed with this field zeroed
  std::uint32_t reserved;
  std::uint64_t reserved2;
};
static_assert(sizeof(PageHeader) == 32);

// Layouts above the tiers (the B-tree) start their own header here.
inline constexpr std::size_t kPageHeaderSize = sizeof(PageHeader);

// The LSN in the header of the page image at `page`.
inline Lsn page_lsn(const std::byte* page) {
  Lsn lsn;
  std::memcpy(&lsn, page + offsetof(PageHeader, lsn), sizeof(lsn));
  return lsn;
}

}  // namespace tristore
