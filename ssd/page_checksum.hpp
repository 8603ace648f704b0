#pragma once
// The checksum every SSD page carries in its PageHeader: crc32c of the whole page with the
// checksum field read as zero (so the page can be checked in place, without a copy).
#include <cstddef>
#include <cstdint>

#include "common/checksum.hpp"
#include "common/page_format.hpp"
#include "common/types.hpp"

namespace tristore {

inline std::uint32_t page_checksum(const std::byte* page) {
  constexpr std::size_t kBefore = offsetof(PageHeader, checksum);
  constexpr std::size_t kAfter = kBefore + sizeof(PageHeader::checksum);
  constexpr std::byte kZeros[sizeof(PageHeader::checksum)] = {};
  std::uint32_t crc = crc32c(page, kBefore);
  crc = crc32c(kZeros, sizeof(kZeros), crc);
  return crc32c(page + kAfter, kPageSize - kAfter, crc);
}

}  // namespace tristore
