#pragma once
// Which SSD pages are in use: one bit per page, lowest-free-first allocation so the file fills
// from the front. Also the set of pages claimed for new pages (set and clear, no allocation).
// Not thread-safe; SsdPageFile serialises access.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/types.hpp"

namespace tristore {

class AllocationBitmap {
 public:
  explicit AllocationBitmap(std::uint64_t capacity)
      : capacity_(capacity), words_((capacity + 63) / 64, 0) {}

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t in_use() const { return in_use_; }

  bool test(PageId id) const { return (words_[id / 64] >> (id % 64)) & 1; }

  // The lowest free page, now marked used; kInvalidPageId when full.
  PageId allocate_lowest() {
    for (std::size_t w = first_candidate_word_; w < words_.size(); ++w) {
      if (words_[w] == ~std::uint64_t{0}) continue;
      first_candidate_word_ = w;
      PageId id = w * 64 + static_cast<PageId>(std::countr_one(words_[w]));
      if (id >= capacity_) break;
      words_[w] |= std::uint64_t{1} << (id % 64);
      ++in_use_;
      return id;
    }
    first_candidate_word_ = words_.size();
    return kInvalidPageId;
  }

  void set(PageId id) {
    if (test(id)) return;
    words_[id / 64] |= std::uint64_t{1} << (id % 64);
    ++in_use_;
  }

  void clear(PageId id) {
    words_[id / 64] &= ~(std::uint64_t{1} << (id % 64));
    --in_use_;
    if (id / 64 < first_candidate_word_) first_candidate_word_ = id / 64;
  }

  void clear_all() {
    std::fill(words_.begin(), words_.end(), 0);
    in_use_ = 0;
    first_candidate_word_ = 0;
  }

  template <typename Visit>
  void for_each_set(Visit&& visit) const {
    for (std::size_t w = 0; w < words_.size(); ++w)
      for (std::uint64_t word = words_[w]; word != 0; word &= word - 1)
        visit(static_cast<PageId>(w * 64 + std::countr_zero(word)));
  }

  // Whether every set bit is set in `other` too.
  bool subset_of(const AllocationBitmap& other) const {
    if (other.words_.size() != words_.size()) return false;
    for (std::size_t w = 0; w < words_.size(); ++w)
      if ((words_[w] & ~other.words_[w]) != 0) return false;
    return true;
  }

  // Serialised form: the words, little-endian, zero-padded to `out.size()`.
  void store(std::span<std::byte> out) const;
  // Returns false (and changes nothing) when `in` sets bits beyond the capacity.
  bool load(std::span<const std::byte> in);

 private:
  std::uint64_t capacity_;
  std::vector<std::uint64_t> words_;
  std::uint64_t in_use_ = 0;
  std::size_t first_candidate_word_ = 0;  // every word before it is full
};

}  // namespace tristore
