#pragma once
// An open-addressing hash map from page id to a small value (linear probing, backward-shift
// deletion, no tombstones). Lookups never allocate; inserts double the table at half load.
// Used by the combined page table and the admission set.
#include <algorithm>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/types.hpp"

namespace tristore {

template <typename Value>
class PageIdMap {
 public:
  explicit PageIdMap(std::size_t expected_entries = 0) { rebuild(capacity_for(expected_entries)); }

  Value* find(PageId page_id) {
    for (std::size_t i = home(page_id);; i = (i + 1) & mask_) {
      Entry& entry = entries_[i];
      if (entry.key == page_id) return &entry.value;
      if (entry.key == kInvalidPageId) return nullptr;
    }
  }
  const Value* find(PageId page_id) const { return const_cast<PageIdMap*>(this)->find(page_id); }

  void insert_or_assign(PageId page_id, Value value) {
    assert(page_id != kInvalidPageId);
    if (Value* existing = find(page_id)) {
      *existing = value;
      return;
    }
    if (2 * (size_ + 1) > entries_.size()) grow();
    place(page_id, value);
    ++size_;
  }

  bool erase(PageId page_id) {
    std::size_t hole = home(page_id);
    while (entries_[hole].key != page_id) {
      if (entries_[hole].key == kInvalidPageId) return false;
      hole = (hole + 1) & mask_;
    }
    // Backward shift: pull later entries of the probe run into the hole unless that would move
    // them before their home slot.
    for (std::size_t next = (hole + 1) & mask_; entries_[next].key != kInvalidPageId;
         next = (next + 1) & mask_) {
      const std::size_t want = home(entries_[next].key);
      const bool stays =
          hole <= next ? (hole < want && want <= next) : (hole < want || want <= next);
      if (stays) continue;
      entries_[hole] = entries_[next];
      hole = next;
    }
    entries_[hole].key = kInvalidPageId;
    --size_;
    return true;
  }

  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const Entry& entry : entries_)
      if (entry.key != kInvalidPageId) visit(entry.key, entry.value);
  }

  std::size_t size() const { return size_; }
  std::size_t memory_bytes() const { return entries_.capacity() * sizeof(Entry); }
  void clear() { rebuild(entries_.size()); }

 private:
  struct Entry {
    PageId key = kInvalidPageId;
    Value value{};
  };

  static std::size_t capacity_for(std::size_t entries) {
    return std::bit_ceil(std::max<std::size_t>(16, 2 * entries));
  }
  // Page ids are often dense: mix them (murmur3 finaliser) so runs do not cluster.
  std::size_t home(PageId key) const {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return static_cast<std::size_t>(key) & mask_;
  }
  void place(PageId page_id, Value value) {
    std::size_t i = home(page_id);
    while (entries_[i].key != kInvalidPageId) i = (i + 1) & mask_;
    entries_[i] = Entry{page_id, value};
  }
  void rebuild(std::size_t capacity) {
    entries_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    size_ = 0;
  }
  void grow() {
    std::vector<Entry> old = std::move(entries_);
    const std::size_t size = size_;
    rebuild(old.size() * 2);
    for (const Entry& entry : old)
      if (entry.key != kInvalidPageId) place(entry.key, entry.value);
    size_ = size;
  }

  std::vector<Entry> entries_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace tristore
