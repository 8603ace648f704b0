#pragma once
// Rows of one table that unfinished transactions removed (engine/btree_table.hpp). A remove
// takes its row out of the leaf at once, while the row's lock stays until the transaction
// ends; a scan finds locks through the rows it passes, so it would pass the gap silently: it
// would see the remove before its commit, and miss a committed row for good should the
// transaction abort. A scan asks here for the removed rows in the range it covered and locks
// (or checks) each as it would the row itself. The lock table cannot be asked: it names rows
// by a hash of their key.
//
// A remove adds its row before it changes the leaf, so a scan that saw the leaf without the
// row finds it here; the manager forgets a transaction's rows when it ends, after an abort's
// undo has put them back. An abort beside scans puts a row back in its leaf while the row is
// still locked, before it is forgotten here, so a scan meets the lock throughout.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "common/spin_latch.hpp"
#include "engine/transaction_state.hpp"

namespace tristore {

template <typename K>
class RemovedRows final : public RowRemovals {
 public:
  // The scan's fast path: no unfinished transaction removed a row of the table.
  bool any() const { return count_.load(std::memory_order_acquire) != 0; }

  // Before the remove changes the leaf; the transaction forgets them when it ends.
  void add(TransactionState& txn, const K& key) {
    {
      const std::lock_guard latched(latch_);
      rows_.emplace(key, &txn);
      count_.fetch_add(1, std::memory_order_release);
    }
    if (std::find(txn.removals.begin(), txn.removals.end(), this) == txn.removals.end())
      txn.removals.push_back(this);
  }
  // The remove found no row to take out.
  void drop(const TransactionState& txn, const K& key) {
    const std::lock_guard latched(latch_);
    const auto [first, last] = rows_.equal_range(key);
    for (auto it = first; it != last; ++it) {
      if (it->second != &txn) continue;
      rows_.erase(it);
      count_.fetch_sub(1, std::memory_order_release);
      return;
    }
  }
  void forget(const TransactionState& txn) override {
    const std::lock_guard latched(latch_);
    std::erase_if(rows_, [&](const auto& row) { return row.second == &txn; });
    count_.store(rows_.size(), std::memory_order_release);
  }

  // Keys that transactions other than `self` removed from [low, high] (low left out where
  // !low_inclusive, high where !high_inclusive; no high: to the end), into `keys`.
  void others_between(const TransactionState* self, const K& low, bool low_inclusive, const K* high,
                      bool high_inclusive, std::vector<K>& keys) const {
    keys.clear();
    const std::lock_guard latched(latch_);
    auto it = low_inclusive ? rows_.lower_bound(low) : rows_.upper_bound(low);
    for (; it != rows_.end(); ++it) {
      if (high != nullptr && (high_inclusive ? *high < it->first : !(it->first < *high))) break;
      if (it->second != self && (keys.empty() || keys.back() != it->first))
        keys.push_back(it->first);
    }
  }

 private:
  mutable SpinLatch latch_;
  std::multimap<K, const TransactionState*> rows_;
  std::atomic<std::size_t> count_{0};
};

}  // namespace tristore
