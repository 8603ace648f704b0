#pragma once
// Byte layout of B+-tree nodes inside a 16 KiB page. Every offset is a compile-time constant so
// that a lookup can ask the storage layer for exactly the bytes (cache lines) it needs.
//
//   [0, 32)    PageHeader (storage layer)
//   [32, 40)   NodeHeader
//   [64, ...)  keys[capacity]                    sorted ascending
//   [aligned)  leaf: values[capacity]            values[i] belongs to keys[i]
//              inner: swips[capacity + 1]        child i holds keys in [keys[i-1], keys[i])
// Both arrays start on a cache-line boundary, so a key or value touches as few lines as possible.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/page_format.hpp"
#include "common/types.hpp"
#include "tiers/swip.hpp"

namespace tristore {

struct NodeHeader {
  std::uint16_t count;  // keys in the node
  std::uint8_t is_leaf;
  std::uint8_t reserved[5];
};
static_assert(sizeof(NodeHeader) == 8);

inline constexpr std::uint32_t kNodeHeaderOffset = kPageHeaderSize;
inline constexpr std::uint32_t kNodeKeysOffset = kCacheLineSize;
static_assert(kNodeHeaderOffset + sizeof(NodeHeader) <= kNodeKeysOffset);

constexpr std::uint32_t align_to_line(std::uint64_t offset) {
  return static_cast<std::uint32_t>((offset + kCacheLineSize - 1) / kCacheLineSize *
                                    kCacheLineSize);
}

// The largest n with keys[n] (line-aligned) followed by n * element_size bytes in the page.
constexpr std::uint32_t node_capacity(std::size_t key_size, std::size_t element_size,
                                      std::size_t extra_elements) {
  std::uint64_t n = (kPageSize - kNodeKeysOffset) / (key_size + element_size);
  while (n > 0 &&
         align_to_line(kNodeKeysOffset + n * key_size) + (n + extra_elements) * element_size >
             kPageSize)
    --n;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(n, UINT16_MAX));
}

template <typename K, typename V>
struct LeafLayout {
  static constexpr std::uint32_t kCapacity = node_capacity(sizeof(K), sizeof(V), 0);
  static constexpr std::uint32_t kValuesOffset =
      align_to_line(kNodeKeysOffset + std::uint64_t{kCapacity} * sizeof(K));
  static constexpr std::uint32_t key_offset(std::uint32_t i) {
    return kNodeKeysOffset + i * static_cast<std::uint32_t>(sizeof(K));
  }
  static constexpr std::uint32_t value_offset(std::uint32_t i) {
    return kValuesOffset + i * static_cast<std::uint32_t>(sizeof(V));
  }
  static_assert(kCapacity >= 4, "key + value too large: a leaf must hold at least 4 entries");
  static_assert(value_offset(kCapacity) <= kPageSize);
};

template <typename K>
struct InnerLayout {
  static constexpr std::uint32_t kCapacity = node_capacity(sizeof(K), sizeof(Swip), 1);
  static constexpr std::uint32_t kSwipsOffset =
      align_to_line(kNodeKeysOffset + std::uint64_t{kCapacity} * sizeof(K));
  static constexpr std::uint32_t key_offset(std::uint32_t i) {
    return kNodeKeysOffset + i * static_cast<std::uint32_t>(sizeof(K));
  }
  static constexpr std::uint32_t swip_offset(std::uint32_t i) {
    return kSwipsOffset + i * static_cast<std::uint32_t>(sizeof(Swip));
  }
  static_assert(kCapacity >= 4, "key too large: an inner node must hold at least 4 keys");
  static_assert(swip_offset(kCapacity + 1) <= kPageSize);
  static_assert(kSwipsOffset % alignof(Swip) == 0);
};

}  // namespace tristore
