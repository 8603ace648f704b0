#pragma once
// A small, fast, seedable generator for workload drivers (xoshiro256**, seeded by splitmix64).
// std::mt19937_64 would do, but it is slower per draw than the operations it drives.
#include <cstdint>

namespace tristore {

class Random {
 public:
  explicit Random(std::uint64_t seed) {
    for (std::uint64_t& word : state_) word = splitmix64(seed);
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double next_double() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform in [0, bound) (bound > 0); multiply-shift, bias below 2^-64 * bound.
  std::uint64_t next_below(std::uint64_t bound) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
  }

  // Uniform in [low, high].
  std::uint64_t next_between(std::uint64_t low, std::uint64_t high) {
    return low + next_below(high - low + 1);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  std::uint64_t state_[4];
};

}  // namespace tristore
