#pragma once
// An open-addressing hash map from page id to a small value (linear probing, backward-shift
// deletion, no tombstones) of a capacity fixed when it is made: room for max_entries with at
// least half of the table empty, so probe runs stay short. Nothing allocates after
// construction and the table never moves. Used by the combined page table (whose entries are
// bounded by the DRAM slabs plus the NVM slots) and the admission set.
//
// One writer at a time, and readers beside it through find_racing: every word is read and
// written atomically. A racing reader may miss an entry that is being moved, or pair a key
// with the value of an entry moved into its place: the caller validates what it finds.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "common/error.hpp"
#include "common/types.hpp"

namespace tristore {

template <typename Value>
class PageIdMap {
  static_assert(sizeof(Value) <= 8 && std::is_trivially_copyable_v<Value>);

 public:
  explicit PageIdMap(std::size_t max_entries)
      : max_entries_(max_entries),
        mask_(capacity_for(max_entries) - 1),
        entries_(std::make_unique<Entry[]>(mask_ + 1)) {}

  // For the writer (and readers it excludes).
  const Value* find(PageId page_id) const {
    for (std::size_t i = home(page_id);; i = (i + 1) & mask_) {
      const Entry& entry = entries_[i];
      const PageId key = load(entry.key);
      if (key == page_id) return &entry.value;
      if (key == kInvalidPageId) return nullptr;
    }
  }

  // For readers beside the writer: a copy of the value, which may be stale or belong to
  // another key (see above).
  std::optional<Value> find_racing(PageId page_id) const {
    for (std::size_t i = home(page_id), probes = 0; probes <= mask_;
         i = (i + 1) & mask_, ++probes) {
      const Entry& entry = entries_[i];
      const PageId key = load(entry.key);
      if (key == page_id) return load(entry.value);
      if (key == kInvalidPageId) return std::nullopt;
    }
    return std::nullopt;
  }

  void insert_or_assign(PageId page_id, Value value) {
    assert(page_id != kInvalidPageId);
    if (const Value* existing = find(page_id)) {
      store(const_cast<Value&>(*existing), value);
      return;
    }
    // Past its bound the map would still work until it is full, but the bound is an invariant
    // of its user (the page table's entries are bounded by frames and slots): a breach is a bug.
    if (size_ == max_entries_) [[unlikely]]
      fail("page id map full: {} entries, inserting page {}", max_entries_, page_id);
    std::size_t i = home(page_id);
    while (load(entries_[i].key) != kInvalidPageId) i = (i + 1) & mask_;
    store(entries_[i].value, value);
    store(entries_[i].key, page_id);
    ++size_;
  }

  bool erase(PageId page_id) {
    Entry* entries = entries_.get();
    std::size_t hole = home(page_id);
    while (load(entries[hole].key) != page_id) {
      if (load(entries[hole].key) == kInvalidPageId) return false;
      hole = (hole + 1) & mask_;
    }
    // Backward shift: pull later entries of the probe run into the hole unless that would move
    // them before their home slot. The value goes first, so a racing reader that matches the
    // key reads a value stored for it or for the key moved in after it.
    for (std::size_t next = (hole + 1) & mask_; load(entries[next].key) != kInvalidPageId;
         next = (next + 1) & mask_) {
      const PageId moving = load(entries[next].key);
      const std::size_t want = home(moving);
      const bool stays =
          hole <= next ? (hole < want && want <= next) : (hole < want || want <= next);
      if (stays) continue;
      store(entries[hole].value, load(entries[next].value));
      store(entries[hole].key, moving);
      hole = next;
    }
    store(entries[hole].key, kInvalidPageId);
    --size_;
    return true;
  }

  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (std::size_t i = 0; i <= mask_; ++i)
      if (load(entries_[i].key) != kInvalidPageId)
        visit(load(entries_[i].key), load(entries_[i].value));
  }

  std::size_t size() const { return size_; }
  std::size_t max_entries() const { return max_entries_; }
  std::size_t memory_bytes() const { return (mask_ + 1) * sizeof(Entry); }

 private:
  struct Entry {
    PageId key = kInvalidPageId;
    Value value{};
  };
  template <typename T>
  static T load(const T& word) {
    return std::atomic_ref<T>(const_cast<T&>(word)).load(std::memory_order_acquire);
  }
  template <typename T>
  static void store(T& word, T value) {
    std::atomic_ref<T>(word).store(value, std::memory_order_release);
  }

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

  std::size_t max_entries_;
  std::size_t mask_;  // the table's size less one, a power of two less one
  std::unique_ptr<Entry[]> entries_;
  std::size_t size_ = 0;
};

}  // namespace tristore
