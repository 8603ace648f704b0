#pragma once
// The checksum of a page as it lies in an NVM slot, kept in the slot's header (not in the page:
// a cache-line-grained write-back must not have to rewrite line 0 for it). The SSD tier keeps
// its own, in the PageHeader of each written copy (ssd/page_checksum.hpp).
//
// It is the XOR of every line's crc32c, each seeded by the line's index (so that lines swapped
// or shifted still change it): a write-back of a few lines updates it from the old and new
// content of those lines alone, where a checksum of the page as a whole would have to read
// all 256 lines from NVM again.
#include <cstddef>
#include <cstdint>

#include "common/checksum.hpp"
#include "common/types.hpp"

namespace tristore {

inline std::uint32_t nvm_line_checksum(std::size_t line, const std::byte* bytes) {
  return crc32c(bytes, kCacheLineSize, static_cast<std::uint32_t>(line) * 0x9E3779B9u + 1);
}

inline std::uint32_t nvm_page_checksum(const std::byte* page) {
  std::uint32_t checksum = 0;
  for (std::size_t line = 0; line < kLinesPerPage; ++line)
    checksum ^= nvm_line_checksum(line, page + line * kCacheLineSize);
  return checksum;
}

// The page's checksum once line `line` changes from old_bytes to new_bytes.
inline std::uint32_t nvm_page_checksum_update(std::uint32_t checksum, std::size_t line,
                                              const std::byte* old_bytes,
                                              const std::byte* new_bytes) {
  return checksum ^ nvm_line_checksum(line, old_bytes) ^ nvm_line_checksum(line, new_bytes);
}

}  // namespace tristore
