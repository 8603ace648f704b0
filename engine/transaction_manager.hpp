#pragma once
// Transactions over the write-ahead log (docs/durability.md): ids, the log chain of each
// transaction, logical undo records, commit, abort with compensation, checkpoints and restart
// (analysis, redo, the losers' undo). Without a log (main-memory) it keeps undo in DRAM only.
// Called with the database's operation latch held (engine/operation_latch.hpp), which it owns:
// exclusive, or in changes mode for begin, commit_beside and the calls of changes beside.
//
// Log space: before each changing operation (and each undo step) reserve() makes sure the log
// can take the operation's records and the next checkpoint can still copy every live undo
// record forward; a checkpoint copies them after its begin record, so it can always drop
// everything before that. A transaction fails for lack of log space only when its live undo
// fills about half the log.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/spin_latch.hpp"
#include "engine/durable_store.hpp"
#include "engine/live_undo_count.hpp"
#include "engine/lock_manager.hpp"
#include "engine/log_manager.hpp"
#include "engine/operation_latch.hpp"
#include "engine/restart_report.hpp"
#include "engine/transaction.hpp"
#include "engine/transaction_state.hpp"

namespace tristore {

class TransactionManager {
 public:
  // Kept free beyond an operation's bound for commit, abort and compensation records.
  static constexpr std::uint64_t kSmallRecordsRoom = 4096;

  // Log bytes of the copy a checkpoint makes of an undo record with this payload (no smaller
  // than the record itself).
  static constexpr std::uint64_t undo_copy_bytes(std::uint64_t payload_size) {
    return log_record_size(sizeof(UndoCopy) + payload_size);
  }

  // log and store both null: volatile.
  TransactionManager(LogManager* log, DurableStore* store);
  TransactionManager(const TransactionManager&) = delete;
  TransactionManager& operator=(const TransactionManager&) = delete;

  bool durable() const { return log_ != nullptr; }
  LogManager* log() { return log_; }
  // Row locks of open transactions, released when they end (isolation).
  LockManager& locks() { return locks_; }
  // Held by every operation of the database's API (engine/operation_latch.hpp); the manager's
  // own calls expect their caller to hold it.
  OperationLatch& latch() const { return latch_; }

  Transaction begin();
  // The state of a single-operation transaction for calls without a Transaction (reused).
  TransactionState& begin_autocommit();
  // A single-operation transaction for a change outside transactions beside others
  // (engine/btree_table.hpp): this thread's own state, a new id. It begins, changes and
  // commits (commit) within one hold of the latch in changes mode, so no checkpoint can see it
  // open, and it is not listed among the active transactions; end_brief ends one that changed
  // nothing. A change that fails midway lists it (list) before it lets go of the latch, to be
  // aborted under the exclusive latch.
  TransactionState& begin_brief();
  void end_brief(TransactionState& txn);
  void list(TransactionState& txn);
  void commit(TransactionState& txn);
  // A commit beside changes (the latch taken in changes mode by this call): its record,
  // group-committed with others', then its locks released. False (nothing done) when the log
  // has no room for it without a checkpoint: the caller commits exclusively.
  bool commit_beside(TransactionState& txn);
  void abort(TransactionState& txn);
  // An abort beside changes: each undo step, newest first, under the latch in changes mode
  // (taken by this call, step by step, so an exclusive operation may come in between), with
  // its compensation record. False at the first step that needs more (UndoTarget::
  // apply_undo_beside): the steps done are gone from txn, and abort() undoes the rest.
  bool abort_beside(TransactionState& txn);
  // A transaction whose abort failed: the manager lets go of it without logging anything.
  // From then on its undo records are no longer copied forward, so a durable manager refuses
  // new transactions and checkpoints (Error) until the database is reopened and restart
  // undoes it from the log.
  void forget(TransactionState& txn);
  bool needs_restart() const { return needs_restart_.load(std::memory_order_relaxed); }
  // A transaction whose handle died inside a call on this database that runs the caller's code
  // (a scan's visit function), where no abort can run: it is marked abandoned (a scan in it
  // stops) and kept, its rows still locked, until this thread's call has ended
  // (AbortsDeferredHere). Not under the latch; noexcept but for memory.
  void abort_later(std::unique_ptr<TransactionState> state);
  // Where a call that runs the caller's code ends: once this thread is inside no call on the
  // database, the transactions abandoned inside it (abort_later) are aborted.
  class [[nodiscard]] AbortsDeferredHere {
   public:
    explicit AbortsDeferredHere(TransactionManager& manager) : manager_(manager) {}
    ~AbortsDeferredHere() {
      if (manager_.deferred_aborts_.load(std::memory_order_relaxed) != 0) [[unlikely]]
        manager_.abort_deferred_here();
    }
    AbortsDeferredHere(const AbortsDeferredHere&) = delete;
    AbortsDeferredHere& operator=(const AbortsDeferredHere&) = delete;

   private:
    TransactionManager& manager_;
  };

  // At open: Error unless the log can take an operation of operation_bytes with undo_room
  // bytes of live undo beside it. `what` names the operation in the message.
  void require_log_room(std::uint64_t operation_bytes, std::uint64_t undo_room,
                        std::string_view what) const;
  // Before each changing table operation and each undo step, when no page is fixed: makes
  // room for log_bytes (the most the step appends) and for copying every live undo record
  // forward, checkpointing if needed. Error if even a checkpoint leaves too little room.
  // Also where the checkpoint interval is kept: a checkpoint is due once the log has grown by
  // it since the last one.
  void reserve(std::uint64_t log_bytes) {
    if (log_ == nullptr) return;
    if (room_without_checkpoint(log_bytes, live_undo_.at_least())) [[likely]]
      return;
    make_room(log_bytes);
  }
  // reserve() for changes beside each other (engine/operation_latch.hpp, changes mode): each
  // changer inside appends at most kBesideChangeBound bytes (its record, with its undo, and
  // that undo's copy), so the room for all of them is checked, not set aside: a changer that
  // entered later checks for itself too. They are counted one per changer slot entered
  // (OperationLatch::changers_at_most), a bound that reads none of the slots the changers
  // write at every change. False when only a checkpoint would make the room
  // (the exclusive latch's, or checkpoint_if_due's: the caller runs exclusively instead), or
  // when the checkpoint interval has passed. Called in changes mode.
  // nvm-direct logs a change in place as before-images and after-images of byte ranges, up to
  // two and a half pages (engine/logged_access.hpp): its bound, set_beside_change_bound.
  static constexpr std::uint64_t kBesideChangeBound = 16 * 1024;
  static constexpr std::uint64_t kInPlaceBesideChangeBound = 48 * 1024;
  void set_beside_change_bound(std::uint64_t bytes) { beside_change_bound_ = bytes; }
  bool room_beside() const {
    if (log_ == nullptr) return true;
    return log_room_beside() &&
           log_->end_lsn() < next_checkpoint_lsn_.load(std::memory_order_relaxed);
  }
  bool log_room_beside() const {
    return log_->free_bytes() >= latch_.changers_at_most() * beside_change_bound_ +
                                     split_room_beside_ + live_undo_.at_least() + kSmallRecordsRoom;
  }
  // An undo step (abort's, or restart's) needs room for one operation on its table's tree:
  // before a change adds live undo, its table's undo step (an operation a level higher,
  // should the tree grow meanwhile) is noted here; returns the largest noted so far, what an
  // undo step of any unfinished transaction, on any table, may need.
  std::uint64_t note_undo_step(std::uint64_t undo_step_bytes) {
    std::uint64_t largest = largest_undo_step_.load(std::memory_order_relaxed);
    while (undo_step_bytes > largest && !largest_undo_step_.compare_exchange_weak(
                                            largest, undo_step_bytes, std::memory_order_relaxed)) {
    }
    return std::max(largest, undo_step_bytes);
  }
  // Before a change beside others adds live undo: whether every unfinished transaction could
  // still be undone, as reserve() keeps it for a change that runs exclusively. An undo step
  // needs, once a checkpoint has copied the live undo forward, room for the largest operation
  // (note_undo_step) and for that undo once more. The changes inside count as if all they
  // log were undo. False: the change runs exclusively, where reserve() checkpoints or refuses
  // it with an Error that leaves the transaction able to abort.
  bool undo_room_beside(std::uint64_t undo_step_bytes) {
    if (log_ == nullptr) return true;
    const std::uint64_t largest = note_undo_step(undo_step_bytes);
    const std::uint64_t live =
        live_undo_.at_least() + latch_.changers_at_most() * beside_change_bound_;
    return log_->usable_bytes() >= largest + 2 * live + 2 * kSmallRecordsRoom;
  }
  // A leaf split beside changes logs up to `bytes` more than a changer's bound
  // (OperationLog::take_split_room): counted for every split under way, taken before the split
  // writes anything, given back after its record. False (nothing taken) without the room.
  bool take_split_room_beside(std::uint64_t bytes) {
    split_room_beside_.fetch_add(bytes);
    if (log_ == nullptr || log_room_beside()) return true;
    split_room_beside_.fetch_sub(bytes);
    return false;
  }
  void give_back_split_room_beside(std::uint64_t bytes) { split_room_beside_.fetch_sub(bytes); }
  // bytes: Config::checkpoint_interval_bytes (0: a quarter of the log's capacity). beside:
  // the store writes pages back beside changes (DurableStore::checkpoint_pages_beside), so
  // the checkpoint that the interval calls for runs beside them (checkpoint_if_due) unless an
  // exclusive operation comes first (reserve).
  void set_checkpoint_interval(std::uint64_t bytes, bool beside);
  // Where a thread that holds no latch may take on work for all: a transaction's begin, a
  // change or commit that found the interval passed (room_beside) before it goes exclusive.
  // Once the interval has passed, the first thread here checkpoints beside the others'
  // changes: its begin record, the pages dirty before it written back a batch at a time in
  // changes mode (exclusive operations run in between), then the rest, the undo copies and
  // the end record exclusively. An exclusive checkpoint meanwhile takes over (its begin is
  // later, it writes everything). True when this thread ran one (the interval starts again).
  bool checkpoint_if_due() {
    if (!beside_checkpoints_ ||
        log_->end_lsn() < next_checkpoint_lsn_.load(std::memory_order_relaxed)) [[likely]]
      return false;
    return checkpoint_beside();
  }
  // Logs (and remembers in txn) a logical undo record, before the table changes.
  void log_undo(TransactionState& txn, UndoTarget& table, std::span<const std::byte> undo);
  // Remembers in txn the undo (UndoLogical + key + before-image) that the record at lsn, a
  // kTupleOperation, carries.
  void note_undo(TransactionState& txn, UndoTarget& table, Lsn lsn,
                 std::span<const std::byte> undo);
  Lsn append_chained(TransactionState& txn, LogRecordType type,
                     std::initializer_list<std::span<const std::byte>> parts);
  void checkpoint();
  // DurableStore::free_with_next_catalog (no store: nothing).
  void free_with_next_catalog(PageId page) {
    if (store_ != nullptr) store_->free_with_next_catalog(page);
  }
  // Whether this thread is in the middle of a logged operation (engine/logged_access.hpp);
  // kept per thread, as several log side by side in changes mode.
  bool in_operation() const { return operating_here == this; }
  void set_in_operation(bool value) { operating_here = value ? this : nullptr; }

  std::uint64_t checkpoints() const { return checkpoints_; }

  // Restart after open: analysis, redo, and the restoration of an interrupted nvm-direct
  // operation. The losers' undo waits until each table is opened (undo_pending), since only
  // the typed table can order its keys.
  void recover(RestartReport& report);
  void undo_pending(UndoTarget& table);
  const RestartReport& restart_report() const { return report_; }
  RestartReport& restart_report() { return report_; }

 private:
  // Whether the log takes log_bytes more beside `live` bytes of live undo (at least the live
  // undo: reserve's bound, or make_room's exact count) with no checkpoint, nor one due.
  bool room_without_checkpoint(std::uint64_t log_bytes, std::uint64_t live) const {
    return log_->free_bytes() >= log_bytes + live + kSmallRecordsRoom &&
           log_->end_lsn() < next_checkpoint_lsn_.load(std::memory_order_relaxed);
  }
  // Live undo added, or taken away: by the exclusive holder directly (a thread alone is that
  // at every change), beside others through the thread's credit.
  void add_live_undo(std::uint64_t bytes) { live_undo_.add(bytes, latch_.exclusive_here()); }
  void remove_live_undo(std::uint64_t bytes) { live_undo_.remove(bytes, latch_.exclusive_here()); }
  struct PendingUndo {
    TxnId txn;
    Lsn lsn;       // the record to name in the compensation (moves with copies)
    Lsn order;     // undo order across transactions
    Lsn prev_lsn;  // the compensation's undo_next_lsn
    std::vector<std::byte> payload;
  };
  struct Loser {
    std::unique_ptr<TransactionState> state;
    std::size_t pending = 0;
  };
  template <typename Visit>
  void for_each_active(Visit&& visit) {
    for (auto& [id, txn] : active_) visit(*txn);
    if (autocommit_active_) visit(autocommit_);
  }
  void make_room(std::uint64_t log_bytes);
  bool checkpoint_beside();
  // A checkpoint's end, its pages written back since `begin`: the log's new start, the live
  // undo copied forward, the end record, the header. The latch exclusive.
  void complete_checkpoint(Lsn begin, bool beside);
  void set_next_checkpoint(Lsn begin);
  void on_log_full();
  // An abort's step done (its compensation record), and its end (the abort record, then
  // finish).
  void step_undone(TransactionState& txn);
  void end_abort(TransactionState& txn);
  void finish(TransactionState& txn);
  void refuse_if_restart_needed(std::string_view what) const;
  void abort_deferred_here();
  Lsn choose_keep_from();
  void copy_live_undo_forward(Lsn keep_from);
  void analyse_and_redo(RestartReport& report);
  void collect_loser_undo(TxnId txn, Lsn first, Lsn last);

  LogManager* log_;
  DurableStore* store_;
  TxnId next_txn_ = 1;
  static inline thread_local const TransactionManager* operating_here = nullptr;
  bool checkpointing_ = false;  // in checkpoint(): a checkpoint's log-full callback is no cue
  // Checkpoints beside changes: whether the store can, the thread that runs one (claimed),
  // and its begin record while it runs (kNoLsn once an exclusive checkpoint took over).
  bool beside_checkpoints_ = false;
  std::uint64_t beside_change_bound_ = kBesideChangeBound;
  std::atomic<bool> checkpoint_claimed_{false};
  Lsn beside_begin_ = kNoLsn;
  std::atomic<bool> needs_restart_{false};  // an abort failed (forget)
  // Log bytes that live undo records would take as copies.
  LiveUndoCount live_undo_;
  std::atomic<std::uint64_t> split_room_beside_{0};  // take_split_room_beside, under way
  std::atomic<std::uint64_t> largest_undo_step_{0};  // note_undo_step: the largest noted
  std::uint64_t checkpoint_interval_ = 0;
  // The log's end at which the interval has passed; read beside changes.
  std::atomic<Lsn> next_checkpoint_lsn_{~Lsn{0}};
  std::uint64_t checkpoints_ = 0;
  // Unfinished transactions begun with begin(); the autocommit one apart (no map insert per
  // operation): for_each_active visits both.
  std::map<TxnId, TransactionState*> active_;
  // Over next_txn_ and active_ among begins and commits beside changes (the exclusive holder
  // reads them without it).
  SpinLatch bookkeeping_;
  mutable OperationLatch latch_;
  LockManager locks_{latch_};
  TransactionState autocommit_;
  bool autocommit_active_ = false;
  // Abandoned transactions (abort_later), by the thread whose call they wait for; their count
  // is read where every scan ends.
  struct DeferredAbort {
    std::thread::id thread;
    std::unique_ptr<TransactionState> state;
  };
  std::vector<DeferredAbort> deferred_;  // under bookkeeping_
  std::atomic<std::size_t> deferred_aborts_{0};
  std::map<TxnId, Loser> losers_;
  std::unordered_map<std::uint32_t, std::vector<PendingUndo>> pending_;  // oldest first
  // Checkpoint-begin records since the log's start, oldest first: where it may start next.
  std::vector<Lsn> checkpoint_begins_;
  std::vector<std::byte> undo_scratch_;
  RestartReport report_;
};

}  // namespace tristore
