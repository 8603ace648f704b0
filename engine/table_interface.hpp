#pragma once
// What every table implementation offers; Table<K, V> (engine/table.hpp) is a handle to one.
// Operations take the transaction they belong to (nullptr: none; a change is then a
// transaction of its own, committed before it returns).
#include <cstddef>
#include <functional>

#include "engine/database.hpp"
#include "engine/transaction_state.hpp"

namespace tristore {

template <TableKey K, TableValue V>
class TableInterface : public UndoTarget {
 public:
  using Visit = std::function<bool(const K&, const V&)>;
  using Generate = std::function<void(std::size_t index, K& key, V& value)>;
  virtual bool get(TransactionState* txn, const K& key, V& out) = 0;
  virtual bool get_part(TransactionState* txn, const K& key, std::size_t offset, std::size_t length,
                        void* out) = 0;
  virtual bool insert(TransactionState* txn, const K& key, const V& value) = 0;
  virtual bool update(TransactionState* txn, const K& key, const V& value) = 0;
  virtual bool update_part(TransactionState* txn, const K& key, std::size_t offset,
                           std::size_t length, const void* bytes) = 0;
  virtual bool remove(TransactionState* txn, const K& key) = 0;
  virtual std::size_t scan(TransactionState* txn, const K& from, std::size_t limit,
                           const Visit& visit) = 0;
  virtual void bulk_load(std::size_t count, const Generate& generate, double fill_factor) = 0;
};

}  // namespace tristore
