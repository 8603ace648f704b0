#pragma once
// YCSB's 64-bit FNV-1 hash of a long (Utils.fnvhash64): the eight bytes low to high, then Java's
// Math.abs. YCSB names record k "user" + fnv_hash64(k) and scrambles Zipfian ranks with it.
#include <cstdint>

namespace tristore {

constexpr std::int64_t fnv_hash64(std::int64_t value) {
  constexpr std::uint64_t kOffsetBasis = 0xCBF29CE484222325ULL;
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::uint64_t hash = kOffsetBasis;
  auto bits = static_cast<std::uint64_t>(value);
  for (int i = 0; i < 8; ++i) {
    hash ^= bits & 0xff;
    bits >>= 8;
    hash *= kPrime;
  }
  // Math.abs(Long.MIN_VALUE) stays negative in Java; two's complement negation does the same.
  const auto signed_hash = static_cast<std::int64_t>(hash);
  return signed_hash < 0 ? static_cast<std::int64_t>(0 - hash) : signed_hash;
}

}  // namespace tristore
