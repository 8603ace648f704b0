#pragma once
// How many bytes of pages a B+-tree of `records` fixed-size entries occupies after bulk_load at
// `fill_factor`: the paper's "data size" (section 5.1). An estimate from the page size (leaves
// keep keys and values in separate arrays behind a small header); used to refuse record counts
// that cannot fit before any file is created, and to label results.
#include <cstdint>

namespace tristore {

std::uint64_t estimated_tree_bytes(std::uint64_t records, std::uint64_t key_bytes,
                                   std::uint64_t value_bytes, double fill_factor);

}  // namespace tristore
