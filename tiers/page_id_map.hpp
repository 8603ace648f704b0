#pragma once
// An open-addressing hash map from page id to a small value (linear probing, backward-shift
// deletion, no tombstones). Lookups never allocate; inserts double the table at half load.
// Used by the combined page table and the admission set.
//
// One writer at a time, and readers beside it through find_racing: every word is read and
// written atomically, and a table outgrown stays allocated until the map is destroyed (at most
// as much again as the live one), so a reader never follows a freed pointer. A racing reader
// may miss an entry that is being moved, or pair a key with the value of an entry moved into
// its place: the caller validates what it finds.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/types.hpp"

namespace tristore {

template <typename Value>
class PageIdMap {
  static_assert(sizeof(Value) <= 8 && std::is_trivially_copyable_v<Value>);

 public:
  explicit PageIdMap(std::size_t expected_entries = 0) { rebuild(capacity_for(expected_entries)); }

  // For the writer (and readers it excludes).
  const Value* find(PageId page_id) const {
    const Table& table = *current_.load(std::memory_order_relaxed);
    for (std::size_t i = home(table, page_id);; i = (i + 1) & table.mask) {
      const Entry& entry = table.entries[i];
      const PageId key = load(entry.key);
      if (key == page_id) return &entry.value;
      if (key == kInvalidPageId) return nullptr;
    }
  }

  // For readers beside the writer: a copy of the value, which may be stale or belong to
  // another key (see above).
  std::optional<Value> find_racing(PageId page_id) const {
    const Table& table = *current_.load(std::memory_order_acquire);
    for (std::size_t i = home(table, page_id), probes = 0; probes <= table.mask;
         i = (i + 1) & table.mask, ++probes) {
      const Entry& entry = table.entries[i];
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
    if (2 * (size_ + 1) > capacity()) grow();
    place(*current_.load(std::memory_order_relaxed), page_id, value);
    ++size_;
  }

  bool erase(PageId page_id) {
    Table& table = *current_.load(std::memory_order_relaxed);
    Entry* entries = table.entries.get();
    std::size_t hole = home(table, page_id);
    while (load(entries[hole].key) != page_id) {
      if (load(entries[hole].key) == kInvalidPageId) return false;
      hole = (hole + 1) & table.mask;
    }
    // Backward shift: pull later entries of the probe run into the hole unless that would move
    // them before their home slot. The value goes first, so a racing reader that matches the
    // key reads a value stored for it or for the key moved in after it.
    for (std::size_t next = (hole + 1) & table.mask; load(entries[next].key) != kInvalidPageId;
         next = (next + 1) & table.mask) {
      const PageId moving = load(entries[next].key);
      const std::size_t want = home(table, moving);
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
    const Table& table = *current_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i <= table.mask; ++i)
      if (load(table.entries[i].key) != kInvalidPageId)
        visit(load(table.entries[i].key), load(table.entries[i].value));
  }

  std::size_t size() const { return size_; }
  std::size_t memory_bytes() const {
    std::size_t bytes = 0;
    for (const auto& table : tables_) bytes += (table->mask + 1) * sizeof(Entry);
    return bytes;
  }
  // No reader may be racing (the old tables are freed).
  void clear() { rebuild(capacity()); }

 private:
  struct Entry {
    PageId key = kInvalidPageId;
    Value value{};
  };
  struct Table {
    std::size_t mask;
    std::unique_ptr<Entry[]> entries;
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
  std::size_t capacity() const { return current_.load(std::memory_order_relaxed)->mask + 1; }
  // Page ids are often dense: mix them (murmur3 finaliser) so runs do not cluster.
  static std::size_t home(const Table& table, PageId key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return static_cast<std::size_t>(key) & table.mask;
  }
  static void place(Table& table, PageId page_id, Value value) {
    std::size_t i = home(table, page_id);
    while (load(table.entries[i].key) != kInvalidPageId) i = (i + 1) & table.mask;
    store(table.entries[i].value, value);
    store(table.entries[i].key, page_id);
  }
  static std::unique_ptr<Table> make_table(std::size_t capacity) {
    return std::make_unique<Table>(Table{capacity - 1, std::make_unique<Entry[]>(capacity)});
  }
  void rebuild(std::size_t capacity) {
    tables_.clear();
    tables_.push_back(make_table(capacity));
    current_.store(tables_.back().get(), std::memory_order_release);
    size_ = 0;
  }
  void grow() {
    const Table& old = *current_.load(std::memory_order_relaxed);
    auto bigger = make_table((old.mask + 1) * 2);
    for (std::size_t i = 0; i <= old.mask; ++i)
      if (load(old.entries[i].key) != kInvalidPageId)
        place(*bigger, load(old.entries[i].key), load(old.entries[i].value));
    tables_.push_back(std::move(bigger));
    current_.store(tables_.back().get(), std::memory_order_release);
  }

  std::vector<std::unique_ptr<Table>> tables_;  // the last is current; older ones outgrown
  std::atomic<Table*> current_{nullptr};
  std::size_t size_ = 0;
};

}  // namespace tristore
