#pragma once
// Pages of known bytes for buffer-manager tests: byte i of the p-th page written is
// pattern(i, p), header aside.
#include <cstddef>
#include <vector>

#include "common/page_format.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/swip.hpp"

namespace tristore::testing {

inline std::byte pattern(std::size_t i, std::size_t page = 0) {
  return std::byte(i * 13 + page * 7 + 5);
}

// `count` new pages of pattern bytes, written down (flush_all): afterwards none is in DRAM,
// each in NVM or on SSD. Their swips, in order.
inline std::vector<Swip> pattern_pages_written_down(BufferManager& bm, std::size_t count) {
  std::vector<Swip> swips;
  for (std::size_t p = 0; p < count; ++p) {
    BufferManager::Guard page = bm.allocate_page();
    std::byte* bytes = page.whole_page();
    for (std::size_t i = kPageHeaderSize; i < kPageSize; ++i) bytes[i] = pattern(i, p);
    page.mark_dirty(kPageHeaderSize, kPageSize - kPageHeaderSize);
    swips.push_back(bm.swip_of(page));
  }
  bm.flush_all();
  return swips;
}

}  // namespace tristore::testing
