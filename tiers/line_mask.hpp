#pragma once
// One bit per cache line of a 16 KiB page (256 bits): which lines of a full frame are resident
// or dirty. Range tests work a word at a time; the single-line case is one shift and mask.
#include <array>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>

#include "common/types.hpp"

namespace tristore {

class LineMask {
 public:
  static constexpr std::size_t kWords = kLinesPerPage / 64;

  bool test(std::size_t line) const { return (words_[line / 64] >> (line % 64)) & 1; }

  // True when every line in [first, last] is set.
  bool all(std::size_t first, std::size_t last) const {
    assert(first <= last && last < kLinesPerPage);
    for (std::size_t w = first / 64; w <= last / 64; ++w) {
      const std::uint64_t mask = word_mask(w, first, last);
      if ((words_[w] & mask) != mask) return false;
    }
    return true;
  }
  void set(std::size_t first, std::size_t last) {
    assert(first <= last && last < kLinesPerPage);
    for (std::size_t w = first / 64; w <= last / 64; ++w) words_[w] |= word_mask(w, first, last);
  }
  void set(std::size_t line) { words_[line / 64] |= std::uint64_t{1} << (line % 64); }
  void set_all() { words_.fill(~std::uint64_t{0}); }
  void clear_all() { words_.fill(0); }

  bool none() const { return (words_[0] | words_[1] | words_[2] | words_[3]) == 0; }
  bool full() const { return (words_[0] & words_[1] & words_[2] & words_[3]) == ~std::uint64_t{0}; }
  // Written out, not a loop: GCC 12 at -O3 with AVX-512 VPOPCNTDQ folds the vectorised loop
  // wrongly for constant masks (set(60, 70) counted 131).
  std::size_t count() const {
    static_assert(kWords == 4);
    return static_cast<std::size_t>(std::popcount(words_[0]) + std::popcount(words_[1]) +
                                    std::popcount(words_[2]) + std::popcount(words_[3]));
  }
  // Number of lines in [first, last] that are not set.
  std::size_t count_clear(std::size_t first, std::size_t last) const {
    std::size_t n = 0;
    for (std::size_t w = first / 64; w <= last / 64; ++w) {
      const std::uint64_t mask = word_mask(w, first, last);
      n += static_cast<std::size_t>(std::popcount(mask & ~words_[w]));
    }
    return n;
  }

  // The first set (clear) line at or after `from`, or kLinesPerPage when there is none.
  std::size_t next_set(std::size_t from) const { return next(from, 0); }
  std::size_t next_clear(std::size_t from) const { return next(from, ~std::uint64_t{0}); }

  // Calls visit(first, count) for every maximal run of set lines, in order.
  template <typename Visit>
  void for_each_run(Visit&& visit) const {
    std::size_t line = next_set(0);
    while (line < kLinesPerPage) {
      const std::size_t end = next_clear(line);
      visit(line, end - line);
      line = next_set(end);
    }
  }

  bool operator==(const LineMask&) const = default;

 private:
  static std::uint64_t word_mask(std::size_t w, std::size_t first, std::size_t last) {
    const std::size_t low = w * 64;
    const std::size_t a = first > low ? first - low : 0;
    const std::size_t b = last < low + 63 ? last - low : 63;
    return (~std::uint64_t{0} >> (63 - b)) & (~std::uint64_t{0} << a);
  }
  std::size_t next(std::size_t from, std::uint64_t invert) const {
    for (std::size_t w = from / 64; w < kWords; ++w) {
      std::uint64_t bits = words_[w] ^ invert;
      if (w == from / 64) bits &= ~std::uint64_t{0} << (from % 64);
      if (bits != 0) return w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
    }
    return kLinesPerPage;
  }

  std::array<std::uint64_t, kWords> words_{};
};
static_assert(sizeof(LineMask) == 32);

}  // namespace tristore
