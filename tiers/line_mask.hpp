#pragma once
// One bit per cache line of a 16 KiB page (256 bits): which lines of a full frame are resident
// or dirty. Range tests work a word at a time; the single-line case is one shift and mask.
// Words are read and written atomically (plain moves on x86): readers that share the database
// latch test a resident mask while the one thread serving a miss sets bits in it. test and all
// acquire what set released, the line's bytes written before it.
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>

#include "common/types.hpp"

namespace tristore {

class LineMask {
 public:
  static constexpr std::size_t kWords = kLinesPerPage / 64;

  bool test(std::size_t line) const { return (acquire(line / 64) >> (line % 64)) & 1; }

  // True when every line in [first, last] is set.
  bool all(std::size_t first, std::size_t last) const {
    assert(first <= last && last < kLinesPerPage);
    for (std::size_t w = first / 64; w <= last / 64; ++w) {
      const std::uint64_t mask = word_mask(w, first, last);
      if ((acquire(w) & mask) != mask) return false;
    }
    return true;
  }
  void set(std::size_t first, std::size_t last) {
    assert(first <= last && last < kLinesPerPage);
    for (std::size_t w = first / 64; w <= last / 64; ++w)
      release(w, word(w) | word_mask(w, first, last));
  }
  void set(std::size_t line) {
    release(line / 64, word(line / 64) | std::uint64_t{1} << (line % 64));
  }
  void set_all() {
    for (std::size_t w = 0; w < kWords; ++w) release(w, ~std::uint64_t{0});
  }
  void clear_all() {
    for (std::size_t w = 0; w < kWords; ++w) release(w, 0);
  }

  bool none() const { return (word(0) | word(1) | word(2) | word(3)) == 0; }
  bool full() const { return (word(0) & word(1) & word(2) & word(3)) == ~std::uint64_t{0}; }
  // Written out, not a loop: GCC 12 at -O3 with AVX-512 VPOPCNTDQ folds the vectorised loop
  // wrongly for constant masks (set(60, 70) counted 131).
  std::size_t count() const {
    static_assert(kWords == 4);
    return static_cast<std::size_t>(std::popcount(word(0)) + std::popcount(word(1)) +
                                    std::popcount(word(2)) + std::popcount(word(3)));
  }
  // Number of lines in [first, last] that are not set.
  std::size_t count_clear(std::size_t first, std::size_t last) const {
    std::size_t n = 0;
    for (std::size_t w = first / 64; w <= last / 64; ++w) {
      const std::uint64_t mask = word_mask(w, first, last);
      n += static_cast<std::size_t>(std::popcount(mask & ~word(w)));
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

  bool operator==(const LineMask& other) const {
    for (std::size_t w = 0; w < kWords; ++w)
      if (word(w) != other.word(w)) return false;
    return true;
  }

 private:
  static std::uint64_t word_mask(std::size_t w, std::size_t first, std::size_t last) {
    const std::size_t low = w * 64;
    const std::size_t a = first > low ? first - low : 0;
    const std::size_t b = last < low + 63 ? last - low : 63;
    return (~std::uint64_t{0} >> (63 - b)) & (~std::uint64_t{0} << a);
  }
  std::size_t next(std::size_t from, std::uint64_t invert) const {
    for (std::size_t w = from / 64; w < kWords; ++w) {
      std::uint64_t bits = word(w) ^ invert;
      if (w == from / 64) bits &= ~std::uint64_t{0} << (from % 64);
      if (bits != 0) return w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
    }
    return kLinesPerPage;
  }

  std::uint64_t word(std::size_t w) const {
    return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(words_[w]))
        .load(std::memory_order_relaxed);
  }
  std::uint64_t acquire(std::size_t w) const {
    return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(words_[w]))
        .load(std::memory_order_acquire);
  }
  void release(std::size_t w, std::uint64_t value) {
    std::atomic_ref<std::uint64_t>(words_[w]).store(value, std::memory_order_release);
  }

  alignas(8) std::array<std::uint64_t, kWords> words_{};
};
static_assert(sizeof(LineMask) == 32);

}  // namespace tristore
