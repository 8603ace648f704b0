#include "workloads/tree_size_estimate.hpp"

#include <algorithm>
#include <cmath>

#include "common/types.hpp"

namespace tristore {

namespace {
// Page header (common/page_format.hpp) plus the node's own fields, rounded up to a line.
constexpr std::uint64_t kNodeHeaderBytes = 2 * kCacheLineSize;
constexpr std::uint64_t kChildPointerBytes = 8;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
}  // namespace

std::uint64_t estimated_tree_bytes(std::uint64_t records, std::uint64_t key_bytes,
                                   std::uint64_t value_bytes, double fill_factor) {
  const std::uint64_t usable = kPageSize - kNodeHeaderBytes;
  const auto per_leaf = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(
             std::floor(static_cast<double>(usable / (key_bytes + value_bytes)) * fill_factor)));
  const auto fanout = std::max<std::uint64_t>(
      2, static_cast<std::uint64_t>(std::floor(
             static_cast<double>(usable / (key_bytes + kChildPointerBytes)) * fill_factor)));
  std::uint64_t level = ceil_div(std::max<std::uint64_t>(records, 1), per_leaf);
  std::uint64_t pages = level;
  while (level > 1) {
    level = ceil_div(level, fanout);
    pages += level;
  }
  return pages * kPageSize;
}

}  // namespace tristore
