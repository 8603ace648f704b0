#pragma once
// The YCSB table of the paper (section 5.2): a 4-byte key and 10 fields of 100 bytes; and the
// micro table of section 5.5: 8-byte keys and 8-byte values.
#include <array>
#include <cstddef>
#include <cstdint>

namespace tristore {

inline constexpr std::size_t kYcsbFieldCount = 10;
inline constexpr std::size_t kYcsbFieldSize = 100;

using YcsbKey = std::uint32_t;
struct YcsbRow {
  std::array<char, kYcsbFieldCount * kYcsbFieldSize> fields;
};
static_assert(sizeof(YcsbRow) == 1000);

using YcsbMicroKey = std::uint64_t;
using YcsbMicroValue = std::uint64_t;

// The byte every position of field `field` of record `key` holds after loading: lets a reader
// check it got the right record and field without storing a copy.
inline char ycsb_loaded_byte(std::uint64_t key, std::size_t field) {
  return static_cast<char>('a' + (key + field) % 26);
}

// The micro table's loaded value for a key.
inline YcsbMicroValue ycsb_micro_loaded_value(std::uint64_t key) {
  return key * 0x9e3779b97f4a7c15ULL;
}

}  // namespace tristore
