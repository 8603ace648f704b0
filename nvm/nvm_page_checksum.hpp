#pragma once
// The checksum of a page as it lies in an NVM slot, kept in the slot's header (not in the page:
// a cache-line-grained write-back must not have to rewrite line 0 for it). The SSD tier keeps
// its own, in the PageHeader of each written copy (ssd/page_checksum.hpp).
#include <cstddef>
#include <cstdint>

#include "common/checksum.hpp"
#include "common/types.hpp"

namespace tristore {

inline std::uint32_t nvm_page_checksum(const std::byte* page) { return crc32c(page, kPageSize); }

}  // namespace tristore
