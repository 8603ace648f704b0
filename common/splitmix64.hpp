#pragma once
// splitmix64: a tiny seedable generator, for choices that must replay from a seed (which
// torn words or sectors survive a simulated crash).
#include <cstdint>

namespace tristore {

inline std::uint64_t splitmix64_next(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace tristore
