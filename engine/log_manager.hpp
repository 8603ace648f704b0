#pragma once
// The write-ahead log in the NVM log area (docs/durability.md), built for many writers.
//
// An append reserves its LSN range with one compare-and-swap (a mutex only when the end
// bound must move or the log is full), then copies and checksums its record outside any
// lock, and publishes it: `completed` is a watermark below which every record is whole. A
// record finished while one before it is still being written waits in a pending table, and
// whoever moves the watermark to it moves it past it, so no appender waits for another. A commit
// waits for the watermark to pass its record, then flushes the records before it itself and fences:
// an sfence drains only its own core's flushes, so no committer relies on another's. Commits
// waiting while one of them fences find themselves covered afterwards (group commit).
//
//   auto log = LogManager::create(tier.device(), tier.log_area());
//   log->set_on_full([&] { engine.checkpoint(); });  // ends in complete_checkpoint()
//   Lsn undo = log->append(LogRecordType::kUndoLogical, txn, kNoLsn, {bytes_of(undo), key});
//   log->commit(txn, undo);  // returns once the commit and every record before it are durable
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "common/spin_latch.hpp"
#include "common/thread_slot.hpp"
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
  // Tests: called by an append between reserving its LSN and writing its record, so that a
  // test can hold a record in flight while others complete after it.
  std::function<void(Lsn)> after_reserve = {};
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
  // Thread-safe; other appends run beside it.
  Lsn append(LogRecordType type, TxnId txn, Lsn prev_lsn,
             std::initializer_list<std::span<const std::byte>> parts = {});
  // Appends the commit record and returns once it is durable.
  Lsn commit(TxnId txn, Lsn prev_lsn);
  // Makes every record with LSN <= lsn durable, and every record before it: waits until they
  // are complete, then one flush of the not yet durable records and one fence cover them and
  // any completed after them. None when they are durable already.
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
  // beside: its pages were written back beside changes (counted apart too).
  void complete_checkpoint(Lsn checkpoint_begin_lsn, Lsn keep_from, bool beside = false);

  LogCursor read_from(Lsn lsn) const;
  // The record at lsn, its payload copied into payload (record.payload views it), for undo
  // walking a prev_lsn chain. No record there -> Error.
  LogRecord record_at(Lsn lsn, std::vector<std::byte>& payload) const;
  LogCursor read_from_start() const;
  LogCursor read_from_checkpoint() const;  // from the start if there is no checkpoint

  Lsn start_lsn() const { return start_.load(std::memory_order_acquire); }
  Lsn end_lsn() const { return reserved_.load(std::memory_order_acquire); }  // the next record's
  Lsn completed_lsn() const { return completed_.load(std::memory_order_acquire); }
  Lsn persisted_lsn() const { return persisted_.load(std::memory_order_acquire); }
  Lsn checkpoint_lsn() const;
  // As persisted in the header: no record ends beyond it.
  Lsn end_bound() const { return end_bound_.load(std::memory_order_acquire); }
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
  bool fits(Lsn end, std::uint64_t size, LogRecordType type) const {
    return end - start_lsn() + size + reserve_for(type) <= area_.capacity();
  }
  // The LSN of a new record of size bytes: [lsn, lsn + size) is this caller's to write.
  Lsn reserve(std::uint64_t size, LogRecordType type);
  Lsn reserve_slow(std::uint64_t size, LogRecordType type);
  // Counts the record (`written` bytes of it copied) and moves the watermark past it, or, if
  // a record before it is still being written, leaves it pending for whoever completes that.
  void publish(Lsn lsn, Lsn end, std::uint64_t written);
  void count_append(std::uint64_t bytes, std::uint64_t lines);
  // Moves the watermark over pending records that follow it.
  void advance() const;
  // Until the records reserved so far start within kPendingWindow of the watermark.
  void wait_for_pending_window() const;
  static std::size_t pending_slot(Lsn lsn) { return lsn / kLogRecordAlignment % kPendingSlots; }
  void make_room(std::unique_lock<std::mutex>& lock, std::uint64_t size, LogRecordType type);
  // Makes the records before `target` durable (waiting for them to complete first).
  void persist_before(Lsn target);
  void raise_end_bound_locked(Lsn record_end);
  void write_header_locked(Lsn start, Lsn checkpoint);
  void write_header_locked(Lsn start, Lsn checkpoint, Lsn end_bound);
  bool is_record_start_locked(Lsn lsn) const;

  NvmDevice& device_;
  LogHeader* headers_;  // the two copies, in NVM
  LogArea area_;
  std::uint32_t log_id_;
  std::uint64_t checkpoint_reserve_;
  std::uint64_t end_bound_step_;
  std::function<void(Lsn)> after_reserve_;
  std::uint32_t epoch_;
  bool recovered_from_older_header_ = false;

  // reserved_ >= completed_ >= persisted_ >= start_; end_bound_ >= reserved_ (published only
  // once the header that holds it is durable). Each on its own line: every appender writes the
  // first two, every commit group the third, and every appender reads the rest.
  // pending_: for a record completed while one before it was not, its end, in the slot of
  // its start; records in flight start less than kPendingWindow past completed_.
  static constexpr std::size_t kPendingSlots = 1 << 14;
  static constexpr std::uint64_t kPendingWindow = kPendingSlots * kLogRecordAlignment;
  alignas(kCacheLineSize) std::atomic<Lsn> reserved_;
  alignas(kCacheLineSize) mutable std::atomic<Lsn> completed_;
  std::unique_ptr<std::atomic<Lsn>[]> pending_;
  alignas(kCacheLineSize) std::atomic<Lsn> persisted_;
  alignas(kCacheLineSize) std::atomic<Lsn> start_;
  std::atomic<Lsn> end_bound_;
  // Appends counted per thread slot (common/thread_slot.hpp), so that appenders share no line
  // for them; each thread bumps its own (threads sharing a slot may lose a count).
  struct alignas(kCacheLineSize) AppendCounts {
    std::atomic<std::uint64_t> records{0};
    std::atomic<std::uint64_t> bytes{0};
  };
  std::array<AppendCounts, kThreadSlots> appends_;
  std::atomic<std::uint64_t> fences_{0};       // under persist_latch_
  std::atomic<std::uint64_t> checkpoints_{0};  // under mutex_

  // One committer flushes and fences; the others spin until its fence covers them, or take
  // it next (a flush and a fence are a few microseconds: no sleeping in the kernel).
  SpinLatch persist_latch_;
  // Ordered before persist_latch_. Guards the header, checkpoint_ and the on_full state.
  mutable std::mutex mutex_;
  std::uint64_t generation_;
  Lsn checkpoint_ = kNoLsn;
  std::function<void()> on_full_;
  bool on_full_running_ = false;
  std::thread::id on_full_thread_;
  std::condition_variable on_full_done_;
};

}  // namespace tristore
