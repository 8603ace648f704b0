#pragma once
// Transactions over the write-ahead log (docs/durability.md): ids, the log chain of each
// transaction, logical undo records, commit, abort with compensation, checkpoints and restart
// (analysis, redo, the losers' undo). Without a log (main-memory) it keeps undo in DRAM only.
// Single-threaded, like the buffer manager.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/durable_store.hpp"
#include "engine/log_manager.hpp"
#include "engine/restart_report.hpp"
#include "engine/transaction.hpp"
#include "engine/transaction_state.hpp"

namespace tristore {

class TransactionManager {
 public:
  // log and store both null: volatile.
  TransactionManager(LogManager* log, DurableStore* store);
  TransactionManager(const TransactionManager&) = delete;
  TransactionManager& operator=(const TransactionManager&) = delete;

  bool durable() const { return log_ != nullptr; }
  LogManager* log() { return log_; }

  Transaction begin();
  // The state of a single-operation transaction for calls without a Transaction (reused).
  TransactionState& begin_autocommit();
  void commit(TransactionState& txn);
  void abort(TransactionState& txn);

  // Called before each changing table operation, when no page is fixed: checkpoints while
  // the log is more than half full, so that an operation never finds it full.
  void before_operation();
  // Logs (and remembers in txn) a logical undo record, before the table changes.
  void log_undo(TransactionState& txn, UndoTarget& table, std::span<const std::byte> undo);
  Lsn append_chained(TransactionState& txn, LogRecordType type,
                     std::initializer_list<std::span<const std::byte>> parts);
  // The checkpoint restart's redo starts from: a page last changed before it logs its full
  // image on its next change.
  Lsn checkpoint_lsn() const { return checkpoint_lsn_; }
  void checkpoint();
  bool in_operation() const { return in_operation_; }
  void set_in_operation(bool value) { in_operation_ = value; }

  // Restart after open: analysis, redo, and the restoration of an interrupted nvm-direct
  // operation. The losers' undo waits until each table is opened (undo_pending), since only
  // the typed table can order its keys.
  void recover(RestartReport& report);
  void undo_pending(UndoTarget& table);
  const RestartReport& restart_report() const { return report_; }
  RestartReport& restart_report() { return report_; }

 private:
  struct PendingUndo {
    TxnId txn;
    Lsn lsn;
    Lsn prev_lsn;
    std::vector<std::byte> payload;
  };
  struct Loser {
    std::unique_ptr<TransactionState> state;
    std::size_t pending = 0;
  };
  void on_log_full();
  void finish(TransactionState& txn);
  void analyse_and_redo(RestartReport& report);
  void collect_loser_undo(TxnId txn, Lsn first, Lsn last);

  LogManager* log_;
  DurableStore* store_;
  TxnId next_txn_ = 1;
  Lsn checkpoint_lsn_ = kNoLsn;
  bool in_operation_ = false;
  bool checkpointing_ = false;
  std::map<TxnId, TransactionState*> active_;
  TransactionState autocommit_;
  std::map<TxnId, Loser> losers_;
  std::unordered_map<std::uint32_t, std::vector<PendingUndo>> pending_;  // newest first
  RestartReport report_;
};

}  // namespace tristore
