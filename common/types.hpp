#pragma once
// Sizes from the paper (van Renen et al. 2018), shared by every tier.
#include <cstddef>
#include <cstdint>

namespace tristore {

using PageId = std::uint64_t;
using Lsn = std::uint64_t;
inline constexpr PageId kInvalidPageId = ~PageId{0};

inline constexpr std::size_t kCacheLineSize = 64;
inline constexpr std::size_t kPageSize = 16 * 1024;
inline constexpr std::size_t kLinesPerPage = kPageSize / kCacheLineSize;
static_assert(kLinesPerPage == 256);

inline constexpr std::size_t line_of(std::size_t offset) { return offset / kCacheLineSize; }

}  // namespace tristore
