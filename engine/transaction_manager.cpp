#include "engine/transaction_manager.hpp"

#include <mutex>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstring>
#include <optional>
#include <unordered_set>

#include "btree/leaf_change.hpp"
#include "common/error.hpp"

namespace tristore {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Calls visit(entry, bytes) for each entry of a kRedoOperation payload.
template <typename Visit>
void for_each_redo_entry(std::span<const std::byte> payload, Visit&& visit) {
  std::size_t at = 0;
  while (at + sizeof(RedoPageBytes) <= payload.size()) {
    RedoPageBytes entry;
    std::memcpy(&entry, payload.data() + at, sizeof(entry));
    at += sizeof(entry);
    if (entry.length > payload.size() - at) fail("log: corrupt redo record (entry past its end)");
    visit(entry, payload.subspan(at, entry.length));
    at += entry.length;
  }
}

// A leaf change whose key the log left out (kLeafKeyElsewhere), with the key of the record's
// undo put back, in scratch; any other entry as it is.
std::span<const std::byte> with_undo_key(const LogRecord& record, std::span<const std::byte> bytes,
                                         std::vector<std::byte>& scratch) {
  LeafChange change;
  if (bytes.size() < sizeof(change)) return bytes;  // the store reports it corrupt
  std::memcpy(&change, bytes.data(), sizeof(change));
  if ((change.flags & kLeafKeyElsewhere) == 0) return bytes;
  const std::span<const std::byte> undo = undo_prefix(record.payload);
  UndoLogical header;
  if (record.type != LogRecordType::kTupleOperation || undo.size() < sizeof(header))
    fail("log corrupt: a leaf change at LSN {} without the undo that holds its key", record.lsn);
  std::memcpy(&header, undo.data(), sizeof(header));
  if (header.key_size != change.key_size)
    fail("log corrupt: the leaf change at LSN {} and its undo disagree on the key", record.lsn);
  change.flags &= static_cast<std::uint8_t>(~kLeafKeyElsewhere);
  scratch.resize(bytes.size() + change.key_size);
  std::memcpy(scratch.data(), &change, sizeof(change));
  std::memcpy(scratch.data() + sizeof(change), undo.data() + sizeof(header), change.key_size);
  std::memcpy(scratch.data() + sizeof(change) + change.key_size, bytes.data() + sizeof(change),
              bytes.size() - sizeof(change));
  return scratch;
}

// checkpointing_ while a checkpoint runs on this thread, also when it throws.
class Checkpointing {
 public:
  explicit Checkpointing(bool& flag) : flag_(flag) { flag_ = true; }
  ~Checkpointing() { flag_ = false; }
  Checkpointing(const Checkpointing&) = delete;
  Checkpointing& operator=(const Checkpointing&) = delete;

 private:
  bool& flag_;
};

}  // namespace

void Transaction::commit() {
  state();
  // No room without a checkpoint: one beside changes, if due, else the exclusive commit's.
  // A thread alone commits exclusively at once (OperationLatch::alone_here).
  if (!manager_->latch().alone_here() && manager_->commit_beside(*state_)) return;
  if (manager_->checkpoint_if_due() && manager_->commit_beside(*state_)) return;
  const OperationLatch::Exclusive latched(manager_->latch());
  manager_->commit(*state_);
}

void Transaction::abort() {
  state();
  // Beside the others' changes, step by step; a thread alone aborts exclusively at once.
  const OperationLatch& latch = manager_->latch();
  if (latch.free_here() && !latch.alone_here() && manager_->abort_beside(*state_)) return;
  const OperationLatch::Exclusive latched(manager_->latch());
  manager_->abort(*state_);
}

TransactionState& Transaction::state() {
  if (!active()) fail("transaction {} has already ended", id());
  return *state_;
}

void Transaction::abort_quietly() noexcept {
  if (!active()) return;
  // Inside a call on the database (a scan's visit function) neither an abort nor the fallback
  // below can take the latch: the abort waits until that call ends.
  if (!manager_->latch().free_here()) {
    manager_->abort_later(std::move(state_));
    return;
  }
  try {
    abort();
  } catch (...) {
    // A destructor cannot report; restart undoes what this abort could not. The state dies
    // with this handle, so the manager must not keep it.
    const OperationLatch::Exclusive latched(manager_->latch());
    manager_->forget(*state_);
  }
}

void TransactionManager::abort_later(std::unique_ptr<TransactionState> state) {
  state->abandoned = true;
  const std::lock_guard latched(bookkeeping_);
  deferred_.push_back({std::this_thread::get_id(), std::move(state)});
  deferred_aborts_.store(deferred_.size(), std::memory_order_relaxed);
}

void TransactionManager::abort_deferred_here() {
  if (!latch_.free_here()) return;  // a nested call ended: the outer one aborts them
  // 1. Take this thread's abandoned transactions (other threads' wait for their own calls).
  std::vector<std::unique_ptr<TransactionState>> mine;
  {
    const std::lock_guard latched(bookkeeping_);
    const auto others = std::stable_partition(
        deferred_.begin(), deferred_.end(),
        [](const DeferredAbort& d) { return d.thread != std::this_thread::get_id(); });
    for (auto it = others; it != deferred_.end(); ++it) mine.push_back(std::move(it->state));
    deferred_.erase(others, deferred_.end());
    deferred_aborts_.store(deferred_.size(), std::memory_order_relaxed);
  }
  // 2. Abort each as its handle would have: a handle again, dropped at once.
  for (auto& state : mine) Transaction abandoned(this, std::move(state));
}

TransactionManager::TransactionManager(LogManager* log, DurableStore* store)
    : log_(log), store_(store) {
  if (log_ == nullptr) return;
  // Ids of earlier runs stay below this run's: the epoch rises with every open.
  next_txn_ = (TxnId{log_->epoch()} << 32) + 1;
  log_->set_on_full([this] { on_log_full(); });
}

void TransactionManager::refuse_if_restart_needed(std::string_view what) const {
  if (needs_restart_)
    fail("cannot {}: an abort failed, reopen the database so that restart undoes it", what);
}

Transaction TransactionManager::begin() {
  refuse_if_restart_needed("begin a transaction");
  auto state = std::make_unique<TransactionState>();
  state->locks.reserve(64);  // a typical transaction's row locks, in one allocation
  const std::lock_guard latched(bookkeeping_);
  state->reset(next_txn_++);
  state->listed = true;
  active_[state->id] = state.get();
  return Transaction(this, std::move(state));
}

TransactionState& TransactionManager::begin_brief() {
  refuse_if_restart_needed("begin a transaction");
  thread_local TransactionState state;  // a thread runs one operation at a time
  const std::lock_guard latched(bookkeeping_);
  state.reset(next_txn_++);
  return state;
}

void TransactionManager::end_brief(TransactionState& txn) {
  assert(txn.last_lsn == kNoLsn && txn.undo.empty());
  finish(txn);
}

void TransactionManager::list(TransactionState& txn) {
  const std::lock_guard latched(bookkeeping_);
  txn.listed = true;
  active_[txn.id] = &txn;
}

TransactionState& TransactionManager::begin_autocommit() {
  if (autocommit_active_) forget(autocommit_);  // its abort failed
  refuse_if_restart_needed("begin a transaction");
  autocommit_.reset(next_txn_++);
  autocommit_active_ = true;
  return autocommit_;
}

void TransactionManager::commit(TransactionState& txn) {
  if (log_ != nullptr && txn.last_lsn != kNoLsn) txn.chain(log_->commit(txn.id, txn.last_lsn));
  finish(txn);
}

bool TransactionManager::commit_beside(TransactionState& txn) {
  const OperationLatch::Changes latched(latch_);
  if (log_ != nullptr && txn.last_lsn != kNoLsn) {
    if (!room_beside()) return false;
    txn.chain(log_->commit(txn.id, txn.last_lsn));
  }
  finish(txn);
  return true;
}

void TransactionManager::abort(TransactionState& txn) {
  // Newest first; each applied step logs its page changes and a compensation record.
  while (!txn.undo.empty()) {
    const TransactionState::UndoStep step = txn.undo.back();
    undo_scratch_.assign(txn.payload(step).begin(), txn.payload(step).end());
    step.table->apply_undo(txn, undo_scratch_);
    step_undone(txn);
  }
  end_abort(txn);
}

bool TransactionManager::abort_beside(TransactionState& txn) {
  thread_local std::vector<std::byte> scratch;  // aborts run side by side: one per thread
  while (!txn.undo.empty()) {
    // The step's change (its table checks the log's room: room_beside), its compensation
    // record and, after the last, the abort record.
    const OperationLatch::Changes latched(latch_);
    const TransactionState::UndoStep step = txn.undo.back();
    scratch.assign(txn.payload(step).begin(), txn.payload(step).end());
    if (!step.table->apply_undo_beside(txn, scratch)) return false;
    step_undone(txn);
    if (txn.undo.empty()) end_abort(txn);
  }
  if (!txn.finished) {  // nothing to undo
    const OperationLatch::Changes latched(latch_);
    if (log_ != nullptr && txn.last_lsn != kNoLsn && !room_beside()) return false;
    end_abort(txn);
  }
  return true;
}

void TransactionManager::step_undone(TransactionState& txn) {
  // A checkpoint since the step began may have copied it: the record to name is its latest.
  const TransactionState::UndoStep step = txn.undo.back();
  txn.undo.pop_back();
  if (log_ == nullptr) return;
  const std::uint64_t copy_bytes = undo_copy_bytes(step.size);
  txn.undo_copy_bytes -= copy_bytes;
  remove_live_undo(copy_bytes);
  Compensation clr{.undo_next_lsn = txn.undo.empty() ? kNoLsn : txn.undo.back().lsn,
                   .undone_lsn = step.lsn};
  append_chained(txn, LogRecordType::kCompensation, {bytes_of(clr)});
}

void TransactionManager::end_abort(TransactionState& txn) {
  if (log_ != nullptr && txn.last_lsn != kNoLsn) append_chained(txn, LogRecordType::kAbort, {});
  finish(txn);
}

void TransactionManager::forget(TransactionState& txn) {
  if (log_ != nullptr && txn.last_lsn != kNoLsn) needs_restart_ = true;
  finish(txn);
}

void TransactionManager::finish(TransactionState& txn) {
  // After the undo of an abort: its rows were its own until now.
  for (RowRemovals* removals : txn.removals) removals->forget(txn);
  txn.removals.clear();
  locks_.release_all(txn);
  if (txn.undo_copy_bytes != 0) {  // a shared line, not written for nothing
    remove_live_undo(txn.undo_copy_bytes);
    txn.undo_copy_bytes = 0;
  }
  txn.finished = true;
  if (&txn == &autocommit_) {
    autocommit_active_ = false;
  } else if (txn.listed) {
    const std::lock_guard latched(bookkeeping_);
    active_.erase(txn.id);
    txn.listed = false;
  }
}

void TransactionManager::require_log_room(std::uint64_t operation_bytes, std::uint64_t undo_room,
                                          std::string_view what) const {
  if (log_ == nullptr) return;
  const std::uint64_t needed = operation_bytes + undo_room + kSmallRecordsRoom;
  if (log_->usable_bytes() < needed)
    fail(
        "log area too small: {} of its {} bytes are usable, but {} needs up to {} bytes and "
        "undo records {} more; give the log more room (it takes an eighth of the NVM size)",
        log_->usable_bytes(), log_->capacity(), what, operation_bytes,
        undo_room + kSmallRecordsRoom);
}

void TransactionManager::set_checkpoint_interval(std::uint64_t bytes, bool beside) {
  if (log_ == nullptr) return;
  checkpoint_interval_ = bytes != 0 ? bytes : log_->capacity() / 4;
  beside_checkpoints_ = beside;
  set_next_checkpoint(log_->end_lsn());
}

void TransactionManager::set_next_checkpoint(Lsn begin) {
  if (checkpoint_interval_ != 0)
    next_checkpoint_lsn_.store(begin + checkpoint_interval_, std::memory_order_relaxed);
}

void TransactionManager::make_room(std::uint64_t log_bytes) {
  // 1. The live undo exactly (reserve counted the threads' credits too): there may be room.
  //    (A changer may look inside now, on its way to wait for the exclusive latch: it
  //    touches no credit before it gets in.)
  assert(latch_.exclusive_here());
  const std::uint64_t live = live_undo_.exact_exclusive();
  if (room_without_checkpoint(log_bytes, live)) return;
  // 2. A checkpoint drops everything but the live undo records, which it copies forward. (Or
  //    the interval has passed: then this is all, if it leaves room.)
  checkpoint();
  const std::uint64_t free = log_->free_bytes();
  if (free >= log_bytes + live + kSmallRecordsRoom) return;
  // 3. Still too little: the operation alone is too large for this log (it would not fit
  //    even without live undo), or the live undo fills the log (it takes room twice: the
  //    copies in the log, and room for the next checkpoint to copy them again).
  if (log_bytes + kSmallRecordsRoom > free + live)
    fail("log full: an operation may log up to {} bytes, too much for a log of {} bytes", log_bytes,
         log_->capacity());
  std::size_t unfinished = losers_.size();
  for_each_active([&](TransactionState& txn) { unfinished += txn.undo.empty() ? 0 : 1; });
  fail(
      "log full: the undo records of {} unfinished transaction(s) take {} bytes and a "
      "checkpoint must copy them forward, so a log of {} bytes has no room for an operation "
      "of up to {} bytes more; commit or abort sooner, or give the log more room",
      unfinished, live, log_->capacity(), log_bytes);
}

void TransactionManager::log_undo(TransactionState& txn, UndoTarget& table,
                                  std::span<const std::byte> undo) {
  const Lsn lsn =
      log_ != nullptr ? append_chained(txn, LogRecordType::kUndoLogical, {undo}) : kNoLsn;
  note_undo(txn, table, lsn, undo);
}

void TransactionManager::note_undo(TransactionState& txn, UndoTarget& table, Lsn lsn,
                                   std::span<const std::byte> undo) {
  if (log_ != nullptr) {
    txn.undo_copy_bytes += undo_copy_bytes(undo.size());
    add_live_undo(undo_copy_bytes(undo.size()));
  }
  const std::size_t offset = txn.undo_bytes.size();
  txn.undo_bytes.insert(txn.undo_bytes.end(), undo.begin(), undo.end());
  txn.undo.push_back({&table, lsn, lsn, offset, undo.size()});
}

Lsn TransactionManager::append_chained(TransactionState& txn, LogRecordType type,
                                       std::initializer_list<std::span<const std::byte>> parts) {
  const Lsn lsn = log_->append(type, txn.id, txn.last_lsn, parts);
  txn.chain(lsn);
  return lsn;
}

void TransactionManager::on_log_full() {
  // reserve() made room for the whole operation, room_beside() for changes side by side; a
  // checkpoint now would write back pages whose changes are not logged yet. (Under the
  // exclusive latch no change is inside, though one on its way to wait may look so.)
  if (in_operation() || (latch_.changes_inside() && !latch_.exclusive_here()))
    fail("log full in the middle of an operation ({} bytes of log): it logged more than its bound",
         log_->capacity());
  checkpoint();
}

void TransactionManager::checkpoint() {
  if (log_ == nullptr || checkpointing_) return;
  // A checkpoint would truncate the forgotten transaction's undo records.
  refuse_if_restart_needed("checkpoint");
  const Checkpointing checkpointing(checkpointing_);
  beside_begin_ = kNoLsn;  // one running beside changes: this one writes everything
  // 1. Begin, then every change before it durable in NVM or SSD.
  const Lsn begin = log_->append(LogRecordType::kCheckpointBegin, 0, kNoLsn);
  checkpoint_begins_.push_back(begin);
  set_next_checkpoint(begin);
  store_->checkpoint_pages();
  complete_checkpoint(begin, false);
}

bool TransactionManager::checkpoint_beside() {
  // One thread at a time; the others go on with their changes.
  if (!latch_.free_here() || needs_restart() ||
      checkpoint_claimed_.exchange(true, std::memory_order_acquire))
    return false;
  struct Unclaim {
    std::atomic<bool>& claimed;
    ~Unclaim() { claimed.store(false, std::memory_order_release); }
  } unclaim{checkpoint_claimed_};
  // 1. Begin, the changes before it marked for write-back (BufferManager::mark_dirty), unless
  //    an exclusive checkpoint came first.
  Lsn begin;
  {
    const OperationLatch::Changes latched(latch_, OperationLatch::Purpose::kRead);
    // (The begin record is a changer's small record: room_beside counts this thread in.)
    if (log_->end_lsn() < next_checkpoint_lsn_.load(std::memory_order_relaxed) ||
        !log_room_beside())
      return false;
    begin = log_->append(LogRecordType::kCheckpointBegin, 0, kNoLsn);
    checkpoint_begins_.push_back(begin);
    set_next_checkpoint(begin);
    beside_begin_ = begin;
    store_->begin_checkpoint_pages_beside();
  }
  // 2. Batch by batch, each in changes mode of its own: exclusive operations run in between.
  for (bool written = false; !written;) {
    const OperationLatch::Changes latched(latch_, OperationLatch::Purpose::kRead);
    if (beside_begin_ != begin) return true;  // an exclusive checkpoint took over
    written = store_->checkpoint_pages_beside();
  }
  // 3. What the batches left (frames the exclusive operations moved, parents of swizzled
  //    children), the catalog, the syncs, then the end: exclusively.
  const OperationLatch::Exclusive latched(latch_);
  if (beside_begin_ != begin || needs_restart()) return true;
  beside_begin_ = kNoLsn;
  const Checkpointing checkpointing(checkpointing_);
  // Every record so far durable before the catalog is saved: its save confirms the pages
  // claimed before it (docs/durability.md, "Pages in no tree"), and the frames this round
  // dirtied, new pages among them, are left for the next checkpoint, their records unforced.
  log_->persist_up_to(log_->end_lsn());
  store_->finish_checkpoint_pages_beside();
  complete_checkpoint(begin, true);
  return true;
}

void TransactionManager::complete_checkpoint(Lsn begin, bool beside) {
  // 1. Where the log will start, and the live undo records before it copied after begin.
  const Lsn keep_from = choose_keep_from();
  copy_live_undo_forward(keep_from);
  // 2. End, with the unfinished transactions (losers awaiting undo included).
  std::vector<ActiveTransaction> active;
  for_each_active([&](TransactionState& txn) {
    if (txn.first_lsn != kNoLsn) active.push_back({txn.id, txn.first_lsn, txn.last_lsn});
  });
  for (auto& [id, loser] : losers_)
    active.push_back({id, loser.state->first_lsn, loser.state->last_lsn});
  CheckpointEnd end{.begin_lsn = begin, .active_count = active.size()};
  const Lsn end_lsn = log_->append(LogRecordType::kCheckpointEnd, 0, kNoLsn,
                                   {bytes_of(end), std::as_bytes(std::span(active))});
  log_->persist_up_to(end_lsn);
  // 3. Restart starts here from now on, and the log before keep_from is free: one header
  //    write, so a crash cannot leave the checkpoint named but the space still held.
  log_->complete_checkpoint(begin, keep_from, beside);
  std::erase_if(checkpoint_begins_, [&](Lsn lsn) { return lsn < keep_from; });
  ++checkpoints_;
}

Lsn TransactionManager::choose_keep_from() {
  // The log may start at any checkpoint-begin record once every live undo record before it
  // has a copy after it. The newest begin frees the most, but after a crash that cut a
  // checkpoint short (or a checkpoint that failed), its copies fill part of the log: then an
  // earlier begin, whose later copies need not be made again, may be all the room allows.
  // The start itself always fits (nothing to copy), so a checkpoint never fails for lack of
  // room to copy.
  std::vector<std::pair<Lsn, std::uint64_t>> live;  // newest copy, its copy's size
  for_each_active([&](TransactionState& txn) {
    for (const TransactionState::UndoStep& step : txn.undo)
      live.push_back({step.lsn, undo_copy_bytes(step.size)});
  });
  for (const auto& [table, list] : pending_)
    for (const PendingUndo& undo : list)
      live.push_back({undo.lsn, undo_copy_bytes(undo.payload.size())});
  const std::uint64_t room = log_->free_bytes();
  for (auto candidate = checkpoint_begins_.rbegin(); candidate != checkpoint_begins_.rend();
       ++candidate) {
    std::uint64_t copies = 0;
    for (const auto& [lsn, bytes] : live) copies += lsn < *candidate ? bytes : 0;
    if (copies <= room) return *candidate;
  }
  return log_->start_lsn();
}

void TransactionManager::copy_live_undo_forward(Lsn keep_from) {
  // 1. Every live undo record before keep_from, in undo order across transactions.
  struct Live {
    Lsn order;
    TransactionState* txn;
    Lsn* lsn;
    Lsn* prev_lsn;  // losers only
    std::span<const std::byte> payload;
  };
  std::vector<Live> live;
  for_each_active([&](TransactionState& txn) {
    for (TransactionState::UndoStep& step : txn.undo)
      if (step.lsn < keep_from)
        live.push_back({step.order, &txn, &step.lsn, nullptr, txn.payload(step)});
  });
  for (auto& [table, list] : pending_)
    for (PendingUndo& undo : list)
      if (undo.lsn < keep_from)
        live.push_back({undo.order, losers_.at(undo.txn).state.get(), &undo.lsn, &undo.prev_lsn,
                        undo.payload});
  std::sort(live.begin(), live.end(),
            [](const Live& a, const Live& b) { return a.order < b.order; });
  // 2. Each chain goes on through the copies (a crash halfway through leaves the old records
  //    reachable).
  for (const Live& step : live) {
    const UndoCopy copy{.order_lsn = step.order};
    if (step.prev_lsn != nullptr) *step.prev_lsn = step.txn->last_lsn;
    *step.lsn = append_chained(*step.txn, LogRecordType::kUndoCopy, {bytes_of(copy), step.payload});
  }
  // 3. A transaction's first needed record is now its oldest live undo record (restart walks
  //    its chain back to there), so nothing before keep_from is needed.
  for_each_active([](TransactionState& txn) {
    txn.first_lsn = kNoLsn;
    for (const TransactionState::UndoStep& step : txn.undo)
      if (txn.first_lsn == kNoLsn || step.lsn < txn.first_lsn) txn.first_lsn = step.lsn;
  });
  for (auto& [id, loser] : losers_) loser.state->first_lsn = kNoLsn;
  for (auto& [table, list] : pending_)
    for (const PendingUndo& undo : list) {
      Lsn& first = losers_.at(undo.txn).state->first_lsn;
      if (first == kNoLsn || undo.lsn < first) first = undo.lsn;
    }
}

void TransactionManager::recover(RestartReport& report) {
  report.performed = true;
  analyse_and_redo(report);
  report_ = report;
}

void TransactionManager::analyse_and_redo(RestartReport& report) {
  // 1. Analysis from the checkpoint: who ended, what was freed when, and the before-images of
  //    the operations the crash interrupted: a transaction's after its last other record (its
  //    operations run one after another, so any record of it ends the one before: complete,
  //    or abandoned by an error). Per transaction, as nvm-direct changes side by side: other
  //    transactions' records come between a before-image and its operation's record.
  auto start = std::chrono::steady_clock::now();
  struct Info {
    Lsn first = kNoLsn;
    Lsn last = kNoLsn;
    bool ended = false;
    std::vector<Lsn> interrupted;  // before-images since its last other record
  };
  std::map<TxnId, Info> txns;
  std::unordered_map<PageId, Lsn> freed_at, made_at;
  TxnId max_txn = 0;
  const Lsn checkpoint = log_->checkpoint_lsn();
  bool checkpoint_ended = checkpoint == kNoLsn;
  Lsn end = checkpoint;
  {
    LogCursor cursor = log_->read_from_checkpoint();
    while (std::optional<LogRecord> next = cursor.next()) {
      const LogRecord& record = *next;
      end = record.next_lsn;
      if (record.lsn == checkpoint && record.type != LogRecordType::kCheckpointBegin)
        fail("log corrupt: the checkpoint at LSN {} is no checkpoint-begin record", checkpoint);
      // Where a checkpoint started, finished or not, the log may start later on.
      if (record.type == LogRecordType::kCheckpointBegin) checkpoint_begins_.push_back(record.lsn);
      if (record.type == LogRecordType::kCheckpointEnd) {
        CheckpointEnd header;
        if (record.payload.size() < sizeof(header))
          fail("log corrupt: checkpoint end at LSN {}", record.lsn);
        std::memcpy(&header, record.payload.data(), sizeof(header));
        if (record.payload.size() !=
            sizeof(header) + header.active_count * sizeof(ActiveTransaction))
          fail("log corrupt: checkpoint end at LSN {}", record.lsn);
        if (header.begin_lsn == checkpoint) checkpoint_ended = true;
        for (std::uint64_t i = 0; i < header.active_count; ++i) {
          ActiveTransaction a;
          std::memcpy(&a, record.payload.data() + sizeof(header) + i * sizeof(a), sizeof(a));
          Info& info = txns[a.txn];
          if (info.first == kNoLsn || a.first_lsn < info.first) info.first = a.first_lsn;
          info.last = std::max(info.last, a.last_lsn);
          max_txn = std::max(max_txn, a.txn);
        }
        continue;
      }
      if (record.txn == 0) continue;
      max_txn = std::max(max_txn, record.txn);
      Info& info = txns[record.txn];
      if (info.first == kNoLsn) info.first = record.lsn;
      info.last = record.lsn;
      if (record.type == LogRecordType::kCommit || record.type == LogRecordType::kAbort)
        info.ended = true;
      if (record.type != LogRecordType::kPageBeforeImage) info.interrupted.clear();
      if (record.type == LogRecordType::kPageBeforeImage) {
        info.interrupted.push_back(record.lsn);
        RedoPageBytes e;
        if (record.payload.size() < sizeof(e))
          fail("log: corrupt before-image at LSN {}", record.lsn);
        std::memcpy(&e, record.payload.data(), sizeof(e));
        if (record.payload.size() - sizeof(e) < e.length)
          fail("log: corrupt before-image at LSN {}", record.lsn);
        store_->trust_page(e.page_id);
      }
      if (record.type == LogRecordType::kRedoOperation ||
          record.type == LogRecordType::kTupleOperation) {
        const std::span<const std::byte> entries = redo_entries(record.type, record.payload);
        if (entries.empty() && record.type == LogRecordType::kTupleOperation)
          fail("log corrupt: operation at LSN {} without its undo", record.lsn);
        for_each_redo_entry(entries, [&](const RedoPageBytes& e, auto) {
          if (e.offset == kRedoFreedEntry) freed_at[e.page_id] = record.lsn;
          if (e.offset == kRedoNewPageEntry) made_at[e.page_id] = record.lsn;
          if (e.offset != kRedoRootEntry) store_->trust_page(e.page_id);
        });
      }
    }
  }
  // The header names a checkpoint only once its end record is durable: without one, the log
  // (or the header) is damaged, and the active transactions it listed are unknown.
  if (!checkpoint_ended)
    fail(
        "log corrupt: the checkpoint at LSN {} has no end record before the end of the log at LSN "
        "{}",
        checkpoint, end);
  report.log_bytes_scanned = end - log_->checkpoint_lsn();
  if (max_txn >= next_txn_) next_txn_ = max_txn + 1;
  report.analysis_seconds = seconds_since(start);
  // 2. Redo every complete operation from the checkpoint on; then put back the pages the
  //    interrupted nvm-direct operations had begun to change, newest first. Each held its
  //    pages latched from its first before-image on, so no other operation changed them
  //    after it.
  start = std::chrono::steady_clock::now();
  {
    std::vector<std::byte> leaf_scratch;
    LogCursor cursor = log_->read_from_checkpoint();
    while (std::optional<LogRecord> next = cursor.next()) {
      const LogRecord& record = *next;
      if (record.type != LogRecordType::kRedoOperation &&
          record.type != LogRecordType::kTupleOperation)
        continue;
      ++report.redo_operations;
      for_each_redo_entry(redo_entries(record.type, record.payload),
                          [&](const RedoPageBytes& e, std::span<const std::byte> bytes) {
                            if (e.offset == kRedoFreedEntry) return;
                            if (e.offset == kRedoLeafEntry)
                              bytes = with_undo_key(record, bytes, leaf_scratch);
                            if (e.offset != kRedoRootEntry) {
                              auto freed = freed_at.find(e.page_id);
                              if (freed != freed_at.end() && freed->second > record.lsn) return;
                            }
                            store_->redo(record.lsn, e, bytes);
                            ++report.redo_entries_applied;
                          });
    }
  }
  std::vector<Lsn> interrupted;
  for (const auto& [txn, info] : txns)
    interrupted.insert(interrupted.end(), info.interrupted.begin(), info.interrupted.end());
  std::sort(interrupted.begin(), interrupted.end());
  std::vector<std::byte> payload;
  for (auto it = interrupted.rbegin(); it != interrupted.rend(); ++it) {
    LogRecord record = log_->record_at(*it, payload);
    RedoPageBytes e;
    std::memcpy(&e, record.payload.data(), sizeof(e));
    store_->restore_before_image(e, record.payload.subspan(sizeof(e), e.length));
    ++report.before_images_restored;
  }
  // 3. Pages claimed by operations that never became durable, or freed by durable ones
  //    that the crash cut short: the log's last word on each decides.
  LoggedAllocations allocations;
  for (const auto& [page, lsn] : made_at)
    if (auto freed = freed_at.find(page); freed == freed_at.end() || freed->second < lsn)
      allocations.made.insert(page);
  for (const auto& [page, lsn] : freed_at)
    if (auto made = made_at.find(page); made == made_at.end() || made->second < lsn)
      allocations.freed.insert(page);
  report.pages_given_back = store_->settle_allocations(allocations);
  report.redo_seconds = seconds_since(start);
  // 4. The losers' undo records not yet compensated, for undo_pending.
  start = std::chrono::steady_clock::now();
  for (auto& [txn, info] : txns)
    if (!info.ended) collect_loser_undo(txn, info.first, info.last);
  report.losers = losers_.size();
  for (auto& [table, list] : pending_) {
    report.undo_records_pending += list.size();
    std::sort(list.begin(), list.end(),
              [](const PendingUndo& a, const PendingUndo& b) { return a.order < b.order; });
  }
  // 5. Only now that every loser is known may restart append: a full log checkpoints, and a
  //    checkpoint keeps the log only for the losers it knows. A loser with nothing left to
  //    undo ends with its abort record. Each other transaction whose before-images went back
  //    logs an empty record after them (chained), made durable, so that a later restart does
  //    not put them back again over what ran since (its undo may wait for its table).
  Lsn marked = kNoLsn;
  for (auto& [txn, info] : txns) {
    if (info.ended) continue;
    const bool interrupted = !info.interrupted.empty();
    if (auto loser = losers_.find(txn); loser != losers_.end()) {
      if (interrupted)
        marked = append_chained(*loser->second.state, LogRecordType::kRedoOperation, {});
      continue;
    }
    TransactionState state;
    state.reset(txn);
    state.first_lsn = info.first;
    state.last_lsn = info.last;
    const Lsn abort = append_chained(state, LogRecordType::kAbort, {});
    if (interrupted) marked = abort;
  }
  if (marked != kNoLsn) log_->persist_up_to(log_->end_lsn());
  report.undo_seconds = seconds_since(start);
}

void TransactionManager::collect_loser_undo(TxnId txn, Lsn first, Lsn last) {
  // 1. Walk the chain newest first. A compensation record names the undo record (or copy) it
  //    undid; of the copies of one step (same order LSN) only the newest counts.
  auto state = std::make_unique<TransactionState>();
  state->reset(txn);
  state->first_lsn = first;
  state->last_lsn = last;
  std::unordered_set<Lsn> compensated;
  std::unordered_set<Lsn> seen_steps;
  std::vector<std::byte> payload;
  std::size_t pending = 0;
  for (Lsn lsn = last; lsn != kNoLsn;) {
    LogRecord record = log_->record_at(lsn, payload);
    if (record.txn != txn) fail("log: corrupt undo chain of transaction {} at LSN {}", txn, lsn);
    if (record.type == LogRecordType::kCompensation) {
      if (record.payload.size() < sizeof(Compensation))
        fail("log: corrupt compensation record at LSN {}", lsn);
      Compensation clr;
      std::memcpy(&clr, record.payload.data(), sizeof(clr));
      compensated.insert(clr.undone_lsn);
    } else if (record.type == LogRecordType::kUndoLogical ||
               record.type == LogRecordType::kUndoCopy ||
               record.type == LogRecordType::kTupleOperation) {
      Lsn order = lsn;
      std::span<const std::byte> undo_bytes = record.type == LogRecordType::kTupleOperation
                                                  ? undo_prefix(record.payload)
                                                  : record.payload;
      if (record.type == LogRecordType::kUndoCopy) {
        if (undo_bytes.size() < sizeof(UndoCopy)) fail("log: corrupt undo copy at LSN {}", lsn);
        UndoCopy copy;
        std::memcpy(&copy, undo_bytes.data(), sizeof(copy));
        order = copy.order_lsn;
        undo_bytes = undo_bytes.subspan(sizeof(copy));
      }
      if (undo_bytes.size() < sizeof(UndoLogical)) fail("log: corrupt undo record at LSN {}", lsn);
      if (seen_steps.insert(order).second && !compensated.contains(lsn)) {
        UndoLogical undo;
        std::memcpy(&undo, undo_bytes.data(), sizeof(undo));
        pending_[undo.table_id].push_back(
            {txn, lsn, order, record.prev_lsn,
             std::vector<std::byte>(undo_bytes.begin(), undo_bytes.end())});
        add_live_undo(undo_copy_bytes(undo_bytes.size()));
        ++pending;
      }
    }
    if (lsn == first) break;
    lsn = record.prev_lsn;
  }
  // 2. Nothing left to undo: analyse_and_redo logs its abort record, once every loser is known.
  if (pending != 0) losers_[txn] = Loser{std::move(state), pending};
}

void TransactionManager::undo_pending(UndoTarget& table) {
  auto found = pending_.find(table.table_id());
  if (found == pending_.end()) return;
  const auto start = std::chrono::steady_clock::now();
  // Newest first. Each record stays in pending_ until it is compensated, so a checkpoint
  // that apply_undo triggers copies it forward (and renames it) like any live undo record.
  std::vector<PendingUndo>& list = found->second;
  while (!list.empty()) {
    Loser& loser = losers_.at(list.back().txn);
    TransactionState& state = *loser.state;
    table.apply_undo(state, list.back().payload);
    const PendingUndo& undo = list.back();
    Compensation clr{.undo_next_lsn = undo.prev_lsn, .undone_lsn = undo.lsn};
    append_chained(state, LogRecordType::kCompensation, {bytes_of(clr)});
    remove_live_undo(undo_copy_bytes(undo.payload.size()));
    const TxnId txn = undo.txn;
    list.pop_back();
    if (--loser.pending == 0) {
      append_chained(state, LogRecordType::kAbort, {});
      losers_.erase(txn);
    }
  }
  pending_.erase(table.table_id());
  report_.undo_seconds += seconds_since(start);
}

}  // namespace tristore
