#include "engine/transaction_manager.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <unordered_set>

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

}  // namespace

void Transaction::commit() {
  state();
  manager_->commit(*state_);
}

void Transaction::abort() {
  state();
  manager_->abort(*state_);
}

TransactionState& Transaction::state() {
  if (!active()) fail("transaction {} has already ended", id());
  return *state_;
}

void Transaction::abort_quietly() noexcept {
  if (!active()) return;
  try {
    manager_->abort(*state_);
  } catch (...) {
    // A destructor cannot report; restart undoes what this abort could not.
  }
}

TransactionManager::TransactionManager(LogManager* log, DurableStore* store)
    : log_(log), store_(store) {
  if (log_ == nullptr) return;
  // Ids of earlier runs stay below this run's: the epoch rises with every open.
  next_txn_ = (TxnId{log_->epoch()} << 32) + 1;
  checkpoint_lsn_ = log_->checkpoint_lsn();
  log_->set_on_full([this] { on_log_full(); });
}

Transaction TransactionManager::begin() {
  auto state = std::make_unique<TransactionState>();
  state->reset(next_txn_++);
  active_[state->id] = state.get();
  return Transaction(this, std::move(state));
}

TransactionState& TransactionManager::begin_autocommit() {
  autocommit_.reset(next_txn_++);
  active_[autocommit_.id] = &autocommit_;
  return autocommit_;
}

void TransactionManager::commit(TransactionState& txn) {
  if (log_ != nullptr && txn.last_lsn != kNoLsn) txn.chain(log_->commit(txn.id, txn.last_lsn));
  finish(txn);
}

void TransactionManager::abort(TransactionState& txn) {
  // Newest first; each applied step logs its page changes and a compensation record.
  while (!txn.undo.empty()) {
    const TransactionState::UndoStep step = txn.undo.back();
    std::vector<std::byte> payload(txn.payload(step).begin(), txn.payload(step).end());
    step.table->apply_undo(txn, payload);
    txn.undo.pop_back();
    if (log_ != nullptr) {
      Compensation clr{.undo_next_lsn = txn.undo.empty() ? kNoLsn : txn.undo.back().lsn,
                       .undone_lsn = step.lsn};
      append_chained(txn, LogRecordType::kCompensation, {bytes_of(clr)});
    }
  }
  if (log_ != nullptr && txn.last_lsn != kNoLsn) append_chained(txn, LogRecordType::kAbort, {});
  finish(txn);
}

void TransactionManager::finish(TransactionState& txn) {
  txn.finished = true;
  active_.erase(txn.id);
}

void TransactionManager::before_operation() {
  if (log_ == nullptr || log_->free_bytes() >= log_->capacity() / 2) return;
  // Only worth it when truncation can free something: the oldest active record is not the
  // log's start.
  Lsn oldest = log_->end_lsn();
  for (auto& [id, txn] : active_)
    if (txn->first_lsn != kNoLsn) oldest = std::min(oldest, txn->first_lsn);
  for (auto& [id, loser] : losers_) oldest = std::min(oldest, loser.state->first_lsn);
  if (oldest > log_->start_lsn()) checkpoint();
}

void TransactionManager::log_undo(TransactionState& txn, UndoTarget& table,
                                  std::span<const std::byte> undo) {
  Lsn lsn = kNoLsn;
  if (log_ != nullptr) lsn = append_chained(txn, LogRecordType::kUndoLogical, {undo});
  const std::size_t offset = txn.undo_bytes.size();
  txn.undo_bytes.insert(txn.undo_bytes.end(), undo.begin(), undo.end());
  txn.undo.push_back({&table, lsn, offset, undo.size()});
}

Lsn TransactionManager::append_chained(TransactionState& txn, LogRecordType type,
                                       std::initializer_list<std::span<const std::byte>> parts) {
  const Lsn lsn = log_->append(type, txn.id, txn.last_lsn, parts);
  txn.chain(lsn);
  return lsn;
}

void TransactionManager::on_log_full() {
  if (in_operation_)
    fail("log full in the middle of an operation ({} bytes of log): configure more NVM",
         log_->capacity());
  checkpoint();
}

void TransactionManager::checkpoint() {
  if (log_ == nullptr || checkpointing_) return;
  checkpointing_ = true;
  try {
    // 1. Begin, then every change before it durable in NVM or SSD.
    const Lsn begin = log_->append(LogRecordType::kCheckpointBegin, 0, kNoLsn);
    store_->checkpoint_pages();
    // 2. End, with the transactions still active (losers awaiting undo included).
    std::vector<ActiveTransaction> active;
    Lsn keep = begin;
    for (auto& [id, txn] : active_) {
      if (txn->first_lsn == kNoLsn) continue;
      active.push_back({id, txn->first_lsn, txn->last_lsn});
      keep = std::min(keep, txn->first_lsn);
    }
    for (auto& [id, loser] : losers_) {
      active.push_back({id, loser.state->first_lsn, loser.state->last_lsn});
      keep = std::min(keep, loser.state->first_lsn);
    }
    CheckpointEnd end{.begin_lsn = begin, .active_count = active.size()};
    const Lsn end_lsn = log_->append(LogRecordType::kCheckpointEnd, 0, kNoLsn,
                                     {bytes_of(end), std::as_bytes(std::span(active))});
    log_->persist_up_to(end_lsn);
    // 3. Restart starts here from now on; older records are needed only for undo.
    log_->set_checkpoint(begin);
    checkpoint_lsn_ = begin;
    log_->truncate_before(keep);
  } catch (...) {
    checkpointing_ = false;
    throw;
  }
  checkpointing_ = false;
}

void TransactionManager::recover(RestartReport& report) {
  report.performed = true;
  analyse_and_redo(report);
  report_ = report;
}

void TransactionManager::analyse_and_redo(RestartReport& report) {
  // 1. Analysis from the checkpoint: who ended, what was freed when, and the before-images of
  //    an operation the crash interrupted (those after the last complete operation).
  auto start = std::chrono::steady_clock::now();
  struct Info {
    Lsn first = kNoLsn;
    Lsn last = kNoLsn;
    bool ended = false;
  };
  std::map<TxnId, Info> txns;
  std::unordered_map<PageId, Lsn> freed_at;
  std::vector<Lsn> interrupted;
  TxnId max_txn = 0;
  Lsn end = log_->checkpoint_lsn();
  {
    LogCursor cursor = log_->read_from_checkpoint();
    while (std::optional<LogRecord> next = cursor.next()) {
      const LogRecord& record = *next;
      end = record.next_lsn;
      if (record.type == LogRecordType::kCheckpointEnd) {
        CheckpointEnd header;
        std::memcpy(&header, record.payload.data(), sizeof(header));
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
      if (record.type == LogRecordType::kPageBeforeImage) interrupted.push_back(record.lsn);
      if (record.type == LogRecordType::kRedoOperation) {
        interrupted.clear();
        for_each_redo_entry(record.payload, [&](const RedoPageBytes& e, auto) {
          if (e.offset == kRedoFreedEntry) freed_at[e.page_id] = record.lsn;
        });
      }
    }
  }
  report.log_bytes_scanned = end - log_->checkpoint_lsn();
  if (max_txn >= next_txn_) next_txn_ = max_txn + 1;
  report.analysis_seconds = seconds_since(start);
  // 2. Redo every complete operation from the checkpoint on; then put back the pages an
  //    interrupted nvm-direct operation had begun to change.
  start = std::chrono::steady_clock::now();
  {
    LogCursor cursor = log_->read_from_checkpoint();
    while (std::optional<LogRecord> next = cursor.next()) {
      const LogRecord& record = *next;
      if (record.type != LogRecordType::kRedoOperation) continue;
      ++report.redo_operations;
      for_each_redo_entry(record.payload, [&](const RedoPageBytes& e, auto bytes) {
        if (e.offset == kRedoFreedEntry) return;
        if (e.offset != kRedoRootEntry) {
          auto freed = freed_at.find(e.page_id);
          if (freed != freed_at.end() && freed->second > record.lsn) return;
        }
        store_->redo(record.lsn, e, bytes);
        ++report.redo_entries_applied;
      });
    }
  }
  std::vector<std::byte> payload;
  for (auto it = interrupted.rbegin(); it != interrupted.rend(); ++it) {
    LogRecord record = log_->record_at(*it, payload);
    RedoPageBytes e;
    std::memcpy(&e, record.payload.data(), sizeof(e));
    store_->restore_before_image(e, record.payload.subspan(sizeof(e), e.length));
    ++report.before_images_restored;
  }
  report.redo_seconds = seconds_since(start);
  // 3. The losers' undo records not yet compensated, for undo_pending.
  start = std::chrono::steady_clock::now();
  for (auto& [txn, info] : txns)
    if (!info.ended) collect_loser_undo(txn, info.first, info.last);
  report.losers = losers_.size();
  for (auto& [table, list] : pending_) {
    report.undo_records_pending += list.size();
    std::sort(list.begin(), list.end(),
              [](const PendingUndo& a, const PendingUndo& b) { return a.lsn > b.lsn; });
  }
  report.undo_seconds = seconds_since(start);
}

void TransactionManager::collect_loser_undo(TxnId txn, Lsn first, Lsn last) {
  // 1. Walk the chain newest first; a compensation record names the undo record it undid.
  auto state = std::make_unique<TransactionState>();
  state->reset(txn);
  state->first_lsn = first;
  state->last_lsn = last;
  std::unordered_set<Lsn> compensated;
  std::vector<std::byte> payload;
  std::size_t pending = 0;
  for (Lsn lsn = last; lsn != kNoLsn;) {
    LogRecord record = log_->record_at(lsn, payload);
    if (record.txn != txn) fail("log: corrupt undo chain of transaction {} at LSN {}", txn, lsn);
    if (record.type == LogRecordType::kCompensation) {
      Compensation clr;
      std::memcpy(&clr, record.payload.data(), sizeof(clr));
      compensated.insert(clr.undone_lsn);
    } else if (record.type == LogRecordType::kUndoLogical && !compensated.contains(lsn)) {
      UndoLogical undo;
      std::memcpy(&undo, record.payload.data(), sizeof(undo));
      pending_[undo.table_id].push_back(
          {txn, lsn, record.prev_lsn,
           std::vector<std::byte>(record.payload.begin(), record.payload.end())});
      ++pending;
    }
    if (lsn == first) break;
    lsn = record.prev_lsn;
  }
  // 2. Nothing left to undo: the abort record ends it now.
  if (pending == 0) {
    append_chained(*state, LogRecordType::kAbort, {});
    return;
  }
  losers_[txn] = Loser{std::move(state), pending};
}

void TransactionManager::undo_pending(UndoTarget& table) {
  auto found = pending_.find(table.table_id());
  if (found == pending_.end()) return;
  const auto start = std::chrono::steady_clock::now();
  std::vector<PendingUndo> list = std::move(found->second);
  pending_.erase(found);
  for (PendingUndo& undo : list) {
    Loser& loser = losers_.at(undo.txn);
    TransactionState& state = *loser.state;
    table.apply_undo(state, undo.payload);
    Compensation clr{.undo_next_lsn = undo.prev_lsn, .undone_lsn = undo.lsn};
    append_chained(state, LogRecordType::kCompensation, {bytes_of(clr)});
    if (--loser.pending == 0) {
      append_chained(state, LogRecordType::kAbort, {});
      losers_.erase(undo.txn);
    }
  }
  report_.undo_seconds += seconds_since(start);
}

}  // namespace tristore
