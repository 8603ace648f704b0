#pragma once
// A run of bytes of a page: where a change writes, what a reader is to load.
#include <cstdint>

namespace tristore {

struct ByteRange {
  std::uint32_t offset;
  std::uint32_t length;
};

}  // namespace tristore
