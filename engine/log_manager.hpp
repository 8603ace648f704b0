#pragma once
// The write-ahead log in the NVM log area (docs/durability.md). Appends copy a record into
// the circular area and flush its lines; a fence makes everything appended so far durable, so
// commit() = commit record + one fence, and persist_up_to() lets many commits share one fence
// (group commit). Thread-safe: one mutex orders appends.
//
//   auto log = LogManager::create(tier.device(), tier.log_area());
//   log->set_on_full([&] { engine.checkpoint(); });  // ends in complete_checkpoint()
//   Lsn undo = log->append(LogRecordType::kUndoLogical, txn, kNoLsn, {bytes_of(undo), key,
//   before}); log->commit(txn, undo);                           // returns once the commit is
//   durable
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "emulation/nvm_device.hpp"
#include "engine/log_area.hpp"
#include "engine/log_cursor.hpp"
#include "engine/log_header.hpp"
#include "engine/log_record.hpp"

namespace tristore {

template <typename T>
std::span<const std::byte> bytes_of(const T& value) {
  return std::as_bytes(std::span(&value, 1));
}

struct LogStats {
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;        // padded record bytes appended
  std::uint64_t fences = 0;       // fences issued by commit / persist_up_to
  std::uint64_t checkpoints = 0;  // completed (named in the header)
};

struct LogOptions {
  // How far past its record's end an append moves the header's end bound when it would cross
  // it: restart looks for the end at most this far past it, and appends write the header once
  // per this many bytes of log. 0: capacity / 64, between 4 KiB and 1 MiB.
  std::uint64_t end_bound_step = 0;
};

class LogManager {
 public:
  // Formats area (a span of device's mapping) as an empty log. Too small -> Error.
  static std::unique_ptr<LogManager> create(NvmDevice& device, std::span<std::byte> area,
                                            const LogOptions& options = {});
  // Validates the header (magic, version, checksum, capacity) and finds the end of the log
  // after a crash: the first torn record, looked for up to the header's end bound. Corrupt
  // header or records -> Error.
  static std::unique_ptr<LogManager> open(NvmDevice& device, std::span<std::byte> area,
                                          const LogOptions& options = {});

  LogManager(const LogManager&) = delete;
  LogManager& operator=(const LogManager&) = delete;

  // Appends one record whose payload is the concatenation of parts; returns its LSN. Not yet
  // durable. A full log calls on_full and retries; if on_full frees nothing -> Error.
  Lsn append(LogRecordType type, TxnId txn, Lsn prev_lsn,
             std::initializer_list<std::span<const std::byte>> parts = {});
  // Appends the commit record and returns once it is durable.
  Lsn commit(TxnId txn, Lsn prev_lsn);
  // Makes every record with LSN <= lsn durable; one fence covers all records appended so far,
  // none when they are already durable.
  void persist_up_to(Lsn lsn);

  // Called, without locks held, when an append does not fit: checkpoint, complete_checkpoint().
  void set_on_full(std::function<void()> on_full);
  // Bytes an ordinary record may still use (a reserve is kept for checkpoint records).
  std::uint64_t free_bytes() const;
  // What ordinary records may use of an empty log.
  std::uint64_t usable_bytes() const { return area_.capacity() - checkpoint_reserve_; }
  // Drops the records before lsn (a record start or the end) and persists the new start.
  void truncate_before(Lsn lsn);
  // Names a finished checkpoint (restart's analysis starts at its begin record) and drops the
  // records before keep_from (a record start, start_lsn() <= keep_from <= checkpoint begin),
  // in one header write: a crash leaves the old checkpoint and start, or both new ones.
  void complete_checkpoint(Lsn checkpoint_begin_lsn, Lsn keep_from);

  LogCursor read_from(Lsn lsn) const;
  // The record at lsn, its payload copied into payload (record.payload views it), for undo
  // walking a prev_lsn chain. No record there -> Error.
  LogRecord record_at(Lsn lsn, std::vector<std::byte>& payload) const;
  LogCursor read_from_start() const;
  LogCursor read_from_checkpoint() const;  // from the start if there is no checkpoint

  Lsn start_lsn() const;
  Lsn end_lsn() const;        // where the next record goes
  Lsn persisted_lsn() const;  // every record before it is durable
  Lsn checkpoint_lsn() const;
  Lsn end_bound() const;  // as persisted in the header: no record ends beyond it
  std::uint64_t end_bound_step() const { return end_bound_step_; }
  std::uint64_t capacity() const { return area_.capacity(); }
  std::uint32_t epoch() const { return epoch_; }
  // Whether open found one header copy not valid (torn, damaged, or still blank from create)
  // and recovered from the other one with the precautions of docs/durability.md.
  bool recovered_from_older_header() const { return recovered_from_older_header_; }
  LogStats stats() const;

 private:
  LogManager(NvmDevice& device, std::span<std::byte> area, const LogHeader& header,
             const LogOptions& options);

  std::uint64_t reserve_for(LogRecordType type) const {
    const bool checkpoint =
        type == LogRecordType::kCheckpointBegin || type == LogRecordType::kCheckpointEnd;
    return checkpoint ? 0 : checkpoint_reserve_;
  }
  bool fits(std::uint64_t size, LogRecordType type) const {
    return end_ - start_ + size + reserve_for(type) <= area_.capacity();
  }
  void make_room(std::unique_lock<std::mutex>& lock, std::uint64_t size, LogRecordType type);
  void persist_all_locked();
  void raise_end_bound_locked(Lsn record_end);
  void write_header_locked(Lsn start, Lsn checkpoint);
  bool is_record_start_locked(Lsn lsn) const;

  NvmDevice& device_;
  LogHeader* headers_;  // the two copies, in NVM
  LogArea area_;
  std::uint32_t log_id_;
  std::uint64_t checkpoint_reserve_;
  std::uint64_t end_bound_step_;
  std::uint32_t epoch_;
  bool recovered_from_older_header_ = false;

  mutable std::mutex mutex_;
  std::uint64_t generation_;
  Lsn start_;
  Lsn end_;
  Lsn persisted_;
  Lsn checkpoint_ = kNoLsn;
  Lsn end_bound_;  // the persisted header's; >= end_
  LogStats stats_;
  std::function<void()> on_full_;
  bool on_full_running_ = false;
  std::thread::id on_full_thread_;
  std::condition_variable on_full_done_;
};

}  // namespace tristore
