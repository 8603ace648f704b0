#pragma once
// A typed table: a B+-tree of fixed-size keys and values. Cheap to copy (a handle).
// Operations come in two forms: with a Transaction (part of it) and without. A change without
// one is a transaction of its own, durable when the call returns on a durable architecture.
// Transactions are isolated by row locks (engine/lock_manager.hpp): a row another open
// transaction holds against an operation makes it throw LockConflict; abort and retry.
#include <cstddef>
#include <functional>
#include <memory>

#include "engine/btree_table.hpp"
#include "engine/database.hpp"
#include "engine/table_interface.hpp"
#include "engine/transaction.hpp"
#include "engine/transaction_manager.hpp"

namespace tristore {

template <TableKey K, TableValue V>
class Table {
 public:
  explicit Table(std::shared_ptr<TableInterface<K, V>> impl) : impl_(std::move(impl)) {}

  // Point operations; each returns whether the key was found (insert: was absent).
  bool get(const K& key, V& out) { return impl_->get(nullptr, key, out); }
  // Reads value bytes [offset, offset + length) only: touches only their cache lines.
  bool get_part(const K& key, std::size_t offset, std::size_t length, void* out) {
    return impl_->get_part(nullptr, key, offset, length, out);
  }
  bool insert(const K& key, const V& value) { return impl_->insert(nullptr, key, value); }
  bool update(const K& key, const V& value) { return impl_->update(nullptr, key, value); }
  // Overwrites value bytes [offset, offset + length); only those bytes become dirty.
  bool update_part(const K& key, std::size_t offset, std::size_t length, const void* bytes) {
    return impl_->update_part(nullptr, key, offset, length, bytes);
  }
  bool remove(const K& key) { return impl_->remove(nullptr, key); }

  bool insert(Transaction& txn, const K& key, const V& value) {
    return impl_->insert(&txn.state(), key, value);
  }
  bool update(Transaction& txn, const K& key, const V& value) {
    return impl_->update(&txn.state(), key, value);
  }
  bool update_part(Transaction& txn, const K& key, std::size_t offset, std::size_t length,
                   const void* bytes) {
    return impl_->update_part(&txn.state(), key, offset, length, bytes);
  }
  bool remove(Transaction& txn, const K& key) { return impl_->remove(&txn.state(), key); }
  // Reads in a transaction: the row stays as read until the transaction ends.
  bool get(Transaction& txn, const K& key, V& out) { return impl_->get(&txn.state(), key, out); }
  bool get_part(Transaction& txn, const K& key, std::size_t offset, std::size_t length, void* out) {
    return impl_->get_part(&txn.state(), key, offset, length, out);
  }

  // Visits entries with key >= from in ascending key order, at most `limit` of them, until
  // visit(key, value) returns false. Returns the number visited. visit may read the database
  // but not change it (Error): the scan holds the database's latch. An active Transaction
  // whose handle it destroys is aborted once the scan ends (its rows stay locked until then);
  // a scan in that transaction stops after the visit that dropped it.
  std::size_t scan(const K& from, std::size_t limit,
                   const typename TableInterface<K, V>::Visit& visit) {
    return impl_->scan(nullptr, from, limit, visit);
  }
  // The same in a transaction: each row visited stays as read until it ends (rows inserted
  // into the range later are not locked against). Rows are copied a few ahead of the visit,
  // so a few rows past the last one visited may stay locked too; a row another transaction
  // holds throws LockConflict only when the visit would come to it.
  std::size_t scan(Transaction& txn, const K& from, std::size_t limit,
                   const typename TableInterface<K, V>::Visit& visit) {
    return impl_->scan(&txn.state(), from, limit, visit);
  }
  // Fills an empty table with `count` entries in ascending key order, generate(i, key, value)
  // giving the i-th; leaves are filled to `fill_factor` (the paper uses 0.66). Not logged: a
  // checkpoint follows it (durable architectures).
  void bulk_load(std::size_t count, const typename TableInterface<K, V>::Generate& generate,
                 double fill_factor = 0.66) {
    impl_->bulk_load(count, generate, fill_factor);
  }

 private:
  std::shared_ptr<TableInterface<K, V>> impl_;
};

template <TableKey K, TableValue V>
std::shared_ptr<TableInterface<K, V>> Database::table_object(const TableBinding& binding,
                                                             std::string_view name) {
  if (binding.table_id >= open_tables_.size()) open_tables_.resize(binding.table_id + 1);
  std::optional<OpenTable>& open = open_tables_[binding.table_id];
  if (open) {
    if (open->type != typeid(TableInterface<K, V>))
      fail("table '{}' is open with other key and value types (of the same sizes)", name);
    return std::static_pointer_cast<TableInterface<K, V>>(open->object);
  }
  std::shared_ptr<TableInterface<K, V>> table = make_btree_table<K, V>(binding);
  open.emplace(OpenTable{typeid(TableInterface<K, V>), table});
  return table;
}

template <TableKey K, TableValue V>
Table<K, V> Database::create_table(std::string_view name) {
  const OperationLatch::Exclusive latched(transactions().latch());
  TableBinding binding = bind_table(name, sizeof(K), sizeof(V), true);
  return Table<K, V>(table_object<K, V>(binding, name));
}

template <TableKey K, TableValue V>
Table<K, V> Database::open_table(std::string_view name) {
  const OperationLatch::Exclusive latched(transactions().latch());
  TableBinding binding = bind_table(name, sizeof(K), sizeof(V), false);
  std::shared_ptr<TableInterface<K, V>> table = table_object<K, V>(binding, name);
  binding.transactions->undo_pending(*table);
  return Table<K, V>(std::move(table));
}

}  // namespace tristore
