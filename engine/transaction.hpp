#pragma once
// A transaction handle (move-only). Operations on tables that take it become part of it;
// commit() returns once the commit is durable, abort() rolls every change back. Destroying an
// active transaction aborts it. main-memory transactions are atomic but volatile.
//
//   auto txn = db->begin();
//   accounts.update(txn, 1, a);
//   accounts.update(txn, 2, b);
//   txn.commit();
#include <memory>
#include <utility>

#include "engine/transaction_state.hpp"

namespace tristore {

class TransactionManager;

class Transaction {
 public:
  Transaction() = default;
  Transaction(TransactionManager* manager, std::unique_ptr<TransactionState> state)
      : manager_(manager), state_(std::move(state)) {}
  Transaction(Transaction&&) noexcept = default;
  Transaction& operator=(Transaction&& other) noexcept {
    if (this != &other) {
      abort_quietly();
      manager_ = other.manager_;
      state_ = std::move(other.state_);
    }
    return *this;
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() { abort_quietly(); }

  void commit();
  void abort();
  bool active() const { return state_ != nullptr && !state_->finished; }
  TxnId id() const { return state_ ? state_->id : 0; }
  TransactionState& state();  // Error when the transaction has ended

 private:
  void abort_quietly() noexcept;
  TransactionManager* manager_ = nullptr;
  std::unique_ptr<TransactionState> state_;
};

}  // namespace tristore
