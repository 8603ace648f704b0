#include "ssd/allocation_bitmap.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace tristore {

static_assert(std::endian::native == std::endian::little, "the bitmap is stored little-endian");

void AllocationBitmap::store(std::span<std::byte> out) const {
  std::size_t bytes = words_.size() * sizeof(std::uint64_t);
  assert(out.size() >= bytes);
  std::memcpy(out.data(), words_.data(), bytes);
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(bytes), out.end(), std::byte{0});
}

bool AllocationBitmap::load(std::span<const std::byte> in) {
  // 1. Every bit past the capacity, in the last word and after it, must be clear.
  std::size_t bytes = words_.size() * sizeof(std::uint64_t);
  if (in.size() < bytes) return false;
  if (std::any_of(in.begin() + static_cast<std::ptrdiff_t>(bytes), in.end(),
                  [](std::byte b) { return b != std::byte{0}; }))
    return false;
  std::vector<std::uint64_t> words(words_.size());
  std::memcpy(words.data(), in.data(), bytes);
  if (capacity_ % 64 != 0 && (words.back() >> (capacity_ % 64)) != 0) return false;
  // 2. Adopt it and recount.
  words_ = std::move(words);
  in_use_ = 0;
  for (std::uint64_t word : words_) in_use_ += static_cast<std::uint64_t>(std::popcount(word));
  first_candidate_word_ = 0;
  return true;
}

}  // namespace tristore
