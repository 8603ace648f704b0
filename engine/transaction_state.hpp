#pragma once
// What the engine knows of one transaction: its id, the ends of its log chain, and its undo
// steps in DRAM (for abort without reading the log; the only undo main-memory has).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/log_record.hpp"

namespace tristore {

class TransactionState;

// A table that can apply a logical undo record (UndoLogical + key + before-image) to itself.
class UndoTarget {
 public:
  virtual ~UndoTarget() = default;
  virtual std::uint32_t table_id() const = 0;
  // Idempotent: undoing an operation that never reached the tree changes nothing.
  virtual void apply_undo(TransactionState& txn, std::span<const std::byte> undo) = 0;
  // The same beside other threads' changes (the caller holds the database latch in changes
  // mode): false, with nothing changed, where the step needs more; it then runs exclusively.
  virtual bool apply_undo_beside(TransactionState& /*txn*/, std::span<const std::byte> /*undo*/) {
    return false;
  }
};

// Rows a transaction removed from a table, kept apart until it ends (engine/removed_rows.hpp).
class RowRemovals {
 public:
  virtual ~RowRemovals() = default;
  virtual void forget(const TransactionState& txn) = 0;
};

class TransactionState {
 public:
  struct UndoStep {
    UndoTarget* table;
    Lsn lsn;             // its kUndoLogical record, or the latest kUndoCopy; kNoLsn without a log
    Lsn order;           // its kUndoLogical record's LSN: where it stands in undo order
    std::size_t offset;  // of its payload in undo_bytes
    std::size_t size;
  };

  TxnId id = 0;
  Lsn first_lsn = kNoLsn;  // the oldest record still needed (a checkpoint moves it forward)
  Lsn last_lsn = kNoLsn;   // the newest record: prev_lsn of the next
  std::vector<UndoStep> undo;
  std::vector<std::byte> undo_bytes;   // payloads, kept in one buffer (no allocation per step)
  std::uint64_t undo_copy_bytes = 0;   // log bytes the next checkpoint needs to copy `undo`
  std::vector<std::uint64_t> locks;    // LockNames held (engine/lock_manager.hpp)
  std::vector<RowRemovals*> removals;  // tables it removed rows from, each once
  bool finished = false;
  bool listed = false;  // among the manager's active transactions (checkpoints see it)
  // Its handle died inside a call on the database; aborted once that call ends
  // (TransactionManager::abort_later).
  bool abandoned = false;

  void chain(Lsn lsn) {
    if (first_lsn == kNoLsn) first_lsn = lsn;
    last_lsn = lsn;
  }
  void reset(TxnId new_id) {
    id = new_id;
    first_lsn = last_lsn = kNoLsn;
    undo.clear();
    undo_bytes.clear();
    undo_copy_bytes = 0;
    locks.clear();
    removals.clear();
    finished = false;
    abandoned = false;
  }
  std::span<const std::byte> payload(const UndoStep& step) const {
    return std::span(undo_bytes).subspan(step.offset, step.size);
  }
};

}  // namespace tristore
