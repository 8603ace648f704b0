#pragma once
// A seeded bijection on [0, n) that scatters neighbouring ranks: Zipf rank r becomes key
// permutation(r), so popular keys do not share pages (the paper's "non clustered"). A four-round
// Feistel network over the smallest 2^(2h) >= n, with cycle walking back into [0, n); no
// memory per key, a few multiplications per call (fewer than 4 walks are expected).
#include <array>
#include <bit>
#include <cstdint>

namespace tristore {

class KeyPermutation {
 public:
  KeyPermutation(std::uint64_t n, std::uint64_t seed) : n_(n) {
    const int bits = n <= 4 ? 2 : std::bit_width(n - 1);
    half_bits_ = (bits + 1) / 2;
    half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
    for (std::uint64_t& key : round_keys_) key = mix(seed += 0x9e3779b97f4a7c15ULL);
  }

  std::uint64_t operator()(std::uint64_t rank) const {
    std::uint64_t x = rank;
    do x = encrypt(x);
    while (x >= n_);
    return x;
  }

 private:
  std::uint64_t encrypt(std::uint64_t x) const {
    std::uint64_t left = x >> half_bits_;
    std::uint64_t right = x & half_mask_;
    for (std::uint64_t key : round_keys_) {
      const std::uint64_t next = left ^ (mix(right ^ key) & half_mask_);
      left = right;
      right = next;
    }
    return (left << half_bits_) | right;
  }
  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  std::uint64_t n_;
  int half_bits_;
  std::uint64_t half_mask_;
  std::array<std::uint64_t, 4> round_keys_{};
};

}  // namespace tristore
