#pragma once
// CRC-32C with the SSE4.2 instruction: ~8 bytes per cycle, enough to check every 16 KiB page
// read. The target attribute lets embedders compile this header without -msse4.2.
#include <nmmintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tristore {

__attribute__((target("sse4.2"))) inline std::uint32_t crc32c(const void* data, std::size_t length,
                                                              std::uint32_t seed = 0) {
  auto* bytes = static_cast<const unsigned char*>(data);
  std::uint64_t crc = ~seed;
  while (length >= 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes, 8);
    crc = _mm_crc32_u64(crc, word);
    bytes += 8;
    length -= 8;
  }
  auto crc32 = static_cast<std::uint32_t>(crc);
  while (length-- > 0) crc32 = _mm_crc32_u8(crc32, *bytes++);
  return ~crc32;
}

}  // namespace tristore
