#include "engine/log_manager.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>

#include "common/error.hpp"
#include "common/random_id.hpp"
#include "common/spin_latch.hpp"

namespace tristore {

namespace {

// Epochs stop here (four billion opens); a header or record beyond it is corrupt.
constexpr std::uint32_t kMaxLogEpoch = std::numeric_limits<std::uint32_t>::max() - 1;
// LSN 0 is kNoLsn, so the first record sits one alignment unit in.
constexpr Lsn kFirstLsn = kLogRecordAlignment;
// Checkpoint records may use this much of the area that ordinary records leave free, so that
// the on_full checkpoint can still log itself.
constexpr std::uint64_t kMaxCheckpointReserve = 64 * 1024;

std::uint64_t record_capacity(const NvmDevice& device, std::span<std::byte> area) {
  if (area.size() < kLogMinAreaBytes)
    fail("log area of {} bytes is too small (at least {} bytes)", area.size(), kLogMinAreaBytes);
  if (reinterpret_cast<std::uintptr_t>(area.data()) % alignof(LogHeader) != 0)
    fail("log area must start on a cache line");
  if (!device.contains(area.data()) || !device.contains(area.data() + area.size() - 1))
    fail("log area lies outside the NVM device {}", device.path());
  return (area.size() - kLogRecordAreaOffset) / kLogRecordAlignment * kLogRecordAlignment;
}

std::uint64_t checkpoint_reserve(std::uint64_t capacity) {
  const std::uint64_t eighth = capacity / 8 / kLogRecordAlignment * kLogRecordAlignment;
  return std::min(kMaxCheckpointReserve, eighth);
}

std::uint32_t random_log_id() {
  const std::uint64_t id = random_nonzero_id();
  const auto folded = static_cast<std::uint32_t>(id ^ (id >> 32));
  return folded != 0 ? folded : 1;
}

std::uint64_t bound_step_for(std::uint64_t capacity, const LogOptions& options) {
  constexpr std::uint64_t kMinStep = 4 << 10;
  constexpr std::uint64_t kMaxStep = 1 << 20;
  const std::uint64_t step = options.end_bound_step != 0
                                 ? options.end_bound_step
                                 : std::clamp(capacity / 64, kMinStep, kMaxStep);
  return (step + kLogRecordAlignment - 1) / kLogRecordAlignment * kLogRecordAlignment;
}

// Waits are for other appenders' copies, a few microseconds (common/spin_latch.hpp).
template <typename Done>
void wait_until(Done done) {
  for (unsigned spins = 0; !done(); ++spins) spin_back_off(spins);
}

// Stores a new count, for counters only one thread updates (its own, by thread slot): no
// read-modify-write, whose lock would stall each append behind the draining of its copy's
// stores.
void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace

LogManager::LogManager(NvmDevice& device, std::span<std::byte> area, const LogHeader& header,
                       const LogOptions& options)
    : device_(device),
      headers_(reinterpret_cast<LogHeader*>(area.data())),
      area_(device, area.data() + kLogRecordAreaOffset, header.capacity, header.log_id),
      log_id_(header.log_id),
      checkpoint_reserve_(checkpoint_reserve(header.capacity)),
      end_bound_step_(bound_step_for(header.capacity, options)),
      after_reserve_(options.after_reserve),
      epoch_(header.epoch),
      reserved_(header.start_lsn),
      completed_(header.start_lsn),
      pending_(new std::atomic<Lsn>[kPendingSlots]()),
      persisted_(header.start_lsn),
      start_(header.start_lsn),
      end_bound_(header.end_bound),
      generation_(header.generation),
      checkpoint_(header.checkpoint_lsn) {}

std::unique_ptr<LogManager> LogManager::create(NvmDevice& device, std::span<std::byte> area,
                                               const LogOptions& options) {
  // 1. A fresh id, so that no record of a log formatted here before passes a checksum.
  const std::uint64_t capacity = record_capacity(device, area);
  const auto* old = reinterpret_cast<const LogHeader*>(area.data());
  std::uint32_t log_id = random_log_id();
  while ((old[0].valid() && old[0].log_id == log_id) || (old[1].valid() && old[1].log_id == log_id))
    log_id = random_log_id();

  // 2. Both header copies at once: the old ones must not outlive the new one.
  LogHeader header{};
  header.magic = kLogMagic;
  header.version = kLogFormatVersion;
  header.generation = 1;
  header.log_id = log_id;
  header.capacity = capacity;
  header.start_lsn = kFirstLsn;
  header.checkpoint_lsn = kNoLsn;
  header.end_bound = kFirstLsn + bound_step_for(capacity, options);
  header.epoch = 1;
  header.checksum = header.compute_checksum();
  const LogHeader empty{};
  device.write_log(area.data(), &empty, sizeof(empty));
  device.write_log(area.data() + sizeof(LogHeader), &empty, sizeof(empty));
  device.write_log(area.data() + header.generation % kLogHeaderCopies * sizeof(LogHeader), &header,
                   sizeof(header));
  device.log_counters().header_lines_written.fetch_add(3, std::memory_order_relaxed);
  device.persist(area.data(), kLogHeaderCopies * sizeof(LogHeader));
  return std::unique_ptr<LogManager>(new LogManager(device, area, header, options));
}

std::unique_ptr<LogManager> LogManager::open(NvmDevice& device, std::span<std::byte> area,
                                             const LogOptions& options) {
  // 1. The valid header copy with the higher generation. The other copy, if not valid, is torn
  //    or damaged and may have been the newer one; even blank, as a zeroed line looks like the
  //    copy create leaves blank (then the first reopen looks for the end a little longer).
  const std::uint64_t capacity = record_capacity(device, area);
  LogHeader copies[kLogHeaderCopies];
  device.read(copies, area.data(), sizeof(copies));
  const LogHeader* header = nullptr;
  for (const LogHeader& copy : copies)
    if (copy.valid() && (header == nullptr || copy.generation > header->generation)) header = &copy;
  std::size_t damaged = kLogHeaderCopies;
  for (std::size_t i = 0; i < kLogHeaderCopies; ++i)
    if (!copies[i].valid()) damaged = i;
  if (header == nullptr) {
    if (copies[0].magic != kLogMagic && copies[1].magic != kLogMagic)
      fail("no tristore log in {} (bad magic)", device.path());
    for (const LogHeader& copy : copies)
      if (copy.magic == kLogMagic && copy.checksum == copy.compute_checksum())
        fail("log in {} has format version {}, this build reads version {}", device.path(),
             copy.version, kLogFormatVersion);
    fail("log header corrupt in {}: no copy passes its checksum", device.path());
  }

  // 2. Fields that must agree with the area and with each other.
  if (header->capacity != capacity)
    fail("log header says {} bytes of records, but the log area holds {}", header->capacity,
         capacity);
  if (header->start_lsn < kFirstLsn || header->start_lsn % kLogRecordAlignment != 0)
    fail("log header corrupt: start LSN {}", header->start_lsn);
  if (header->checkpoint_lsn != kNoLsn && (header->checkpoint_lsn < header->start_lsn ||
                                           header->checkpoint_lsn % kLogRecordAlignment != 0))
    fail("log header corrupt: checkpoint LSN {} (start {})", header->checkpoint_lsn,
         header->start_lsn);
  if (header->end_bound < header->start_lsn || header->end_bound % kLogRecordAlignment != 0 ||
      (header->checkpoint_lsn != kNoLsn && header->checkpoint_lsn >= header->end_bound))
    fail("log header corrupt: end bound {} (start {}, checkpoint {})", header->end_bound,
         header->start_lsn, header->checkpoint_lsn);
  if (header->epoch >= kMaxLogEpoch) fail("log header corrupt: epoch {}", header->epoch);

  // 3. Find the end: the first torn record (corruption before it throws). No record of the
  //    log, intact or torn, ends beyond the end bound, so neither does any witness of
  //    corruption; stale records beyond it have lower epochs or other LSNs.
  //    With a copy not valid, that copy may have been the newer one: it may have raised the
  //    bound, moved the start (then the records from the older start are overwritten only
  //    from the older start on, and the checkpoint check below fails) or begun later epochs.
  //    So look for the end past the older copy's bound and accept any later epoch.
  auto log = std::unique_ptr<LogManager>(new LogManager(device, area, *header, options));
  const bool from_older = damaged != kLogHeaderCopies;
  const Lsn limit = from_older ? header->start_lsn + capacity
                               : std::min(header->start_lsn + capacity, header->end_bound);
  const std::uint32_t max_epoch = from_older ? kMaxLogEpoch : header->epoch;
  LogCursor cursor(log->area_, header->start_lsn, limit, LogCursor::End::kSought, max_epoch);
  while (cursor.next()) {
  }
  const Lsn end = cursor.position();
  if (log->checkpoint_ != kNoLsn && log->checkpoint_ >= end) {
    if (from_older)
      fail(
          "log header corrupt: copy {} is not valid and the other copy no longer matches the log "
          "(its checkpoint at LSN {} lies beyond the end of the log at LSN {})",
          damaged, log->checkpoint_, end);
    fail("log corrupt: checkpoint LSN {} lies beyond the end of the log at LSN {}",
         log->checkpoint_, end);
  }

  // 4. Records that survived may still sit in CPU caches after a process crash: flush them
  //    before appending after them; the header write's fence covers them. A new epoch keeps
  //    stale records beyond the end from ever joining the log. Without a trusted header the
  //    crashed run's epoch is unknown: then the stale records beyond the end are erased.
  //    Otherwise only the header of the torn record at the end: the epoch rule rejects a stale
  //    record after one of a newer epoch, but the next run's first record goes exactly there,
  //    and a crash that kept only that record's LSN word (the very word the torn one missed)
  //    would make the torn one whole again, its epoch the one before it.
  std::lock_guard lock(log->mutex_);
  log->reserved_ = log->completed_ = log->persisted_ = end;
  log->area_.flush(header->start_lsn, end - header->start_lsn);
  const std::uint64_t after_end = header->start_lsn + capacity - end;
  const std::uint64_t erased =
      from_older ? after_end : std::min<std::uint64_t>(sizeof(LogRecordHeader), after_end);
  log->area_.erase(end, erased);
  if (erased != 0)
    device.log_counters().header_lines_written.fetch_add(log->area_.lines(end, erased),
                                                         std::memory_order_relaxed);
  log->epoch_ = std::max(header->epoch, cursor.last_epoch()) + 1;
  if (log->epoch_ > kMaxLogEpoch) fail("log corrupt: epoch {}", log->epoch_);
  log->recovered_from_older_header_ = from_older;
  log->end_bound_ = end + log->end_bound_step_;
  log->write_header_locked(header->start_lsn, log->checkpoint_);
  return log;
}

Lsn LogManager::append(LogRecordType type, TxnId txn, Lsn prev_lsn,
                       std::initializer_list<std::span<const std::byte>> parts) {
  std::uint64_t payload_size = 0;
  for (const auto part : parts) payload_size += part.size();
  if (payload_size > std::numeric_limits<std::uint32_t>::max()) [[unlikely]]
    fail("log record payload of {} bytes is too large", payload_size);
  const std::uint64_t size = log_record_size(payload_size);

  // 1. Reserve, 2. write without any lock, 3. publish. The flush is the committer's.
  const Lsn lsn = reserve(size, type);
  if (after_reserve_) [[unlikely]]
    after_reserve_(lsn);
  LogRecordHeader header{};
  header.payload_size = static_cast<std::uint32_t>(payload_size);
  header.lsn = lsn;
  header.persisted_lsn = persisted_lsn();
  header.txn = txn;
  header.prev_lsn = prev_lsn;
  header.type = type;
  header.epoch = epoch_;
  header.checksum = area_.checksum(header, std::span(parts.begin(), parts.size()));
  area_.write(lsn, &header, sizeof(header));
  Lsn position = lsn + sizeof(header);
  for (const auto part : parts) {
    area_.write(position, part.data(), part.size());
    position += part.size();
  }
  publish(lsn, lsn + size, sizeof(header) + payload_size);
  return lsn;
}

Lsn LogManager::reserve(std::uint64_t size, LogRecordType type) {
  Lsn lsn = reserved_.load(std::memory_order_relaxed);
  for (;;) {
    if (!fits(lsn, size, type) || lsn + size > end_bound()) [[unlikely]]
      return reserve_slow(size, type);
    // Records in flight start within one window of the watermark (pending_'s size).
    if (lsn - completed_.load(std::memory_order_relaxed) >= kPendingWindow) [[unlikely]] {
      wait_for_pending_window();
      lsn = reserved_.load(std::memory_order_relaxed);
      continue;
    }
    if (reserved_.compare_exchange_weak(lsn, lsn + size, std::memory_order_acq_rel)) return lsn;
  }
}

Lsn LogManager::reserve_slow(std::uint64_t size, LogRecordType type) {
  std::unique_lock lock(mutex_);
  for (;;) {
    Lsn lsn = reserved_.load(std::memory_order_acquire);
    if (!fits(lsn, size, type)) {
      make_room(lock, size, type);
      continue;
    }
    if (lsn - completed_lsn() >= kPendingWindow) {
      wait_for_pending_window();
      continue;
    }
    // Appends on the fast path stop at the bound this raises until it is durable.
    if (lsn + size > end_bound()) raise_end_bound_locked(lsn + size);
    if (reserved_.compare_exchange_strong(lsn, lsn + size, std::memory_order_acq_rel)) return lsn;
  }
}

void LogManager::wait_for_pending_window() const {
  wait_until([&] {
    advance();
    return end_lsn() - completed_lsn() < kPendingWindow;
  });
}

void LogManager::publish(Lsn lsn, Lsn end, std::uint64_t written) {
  count_append(end - lsn, area_.lines(lsn, written));
  if (completed_.load(std::memory_order_acquire) == lsn) [[likely]] {
    // 1. At the watermark: nobody else can move it (no pending entry names this record).
    completed_.store(end, std::memory_order_release);
    // 2. Records after it that were published while it was being written.
    if (pending_[pending_slot(end)].load(std::memory_order_acquire) > end) [[unlikely]]
      advance();
    return;
  }
  // 3. Behind another record: leave it pending and move on. Whoever moves the watermark to it
  //    moves it past it.
  pending_[pending_slot(lsn)].store(end, std::memory_order_release);
  advance();
}

void LogManager::count_append(std::uint64_t bytes, std::uint64_t lines) {
  AppendCounts& mine = appends_[thread_slot()];
  bump(mine.records, 1);
  bump(mine.bytes, bytes);
  auto& counters = device_.log_counters();
  bump(counters.records, 1);
  bump(counters.bytes_written, bytes);
  bump(counters.record_lines_written, lines);
}

void LogManager::advance() const {
  // A pending entry above c is the end of the record at c: entries of earlier records in the
  // same slot end at or before c, and no record in flight starts a window or more past c.
  Lsn c = completed_.load(std::memory_order_acquire);
  for (;;) {
    const Lsn end = pending_[pending_slot(c)].load(std::memory_order_acquire);
    if (end <= c) return;
    if (completed_.compare_exchange_weak(c, end, std::memory_order_acq_rel)) c = end;
  }
}

Lsn LogManager::commit(TxnId txn, Lsn prev_lsn) {
  const Lsn lsn = append(LogRecordType::kCommit, txn, prev_lsn);
  persist_up_to(lsn);
  return lsn;
}

void LogManager::persist_up_to(Lsn lsn) {
  if (lsn < persisted_lsn()) [[likely]]
    return;
  // The record at lsn, or, where none starts there yet, every record reserved so far.
  persist_before(std::min(lsn + 1, end_lsn()));
}

void LogManager::persist_before(Lsn target) {
  // 1. Wait until the records before target are whole: their writers have published them.
  //    Helping to move the watermark: the store that left a record pending may have missed
  //    its predecessor's last look.
  wait_until([&] {
    advance();
    return completed_lsn() >= target;
  });
  // 2. One committer at a time; those that waited may find a fence already covered them.
  for (unsigned spins = 0; !persist_latch_.try_lock(); ++spins) {
    if (persisted_lsn() >= target) return;
    spin_back_off(spins);
  }
  const std::lock_guard lock(persist_latch_, std::adopt_lock);
  const Lsn from = persisted_lsn();
  if (from >= target) return;
  // 3. Flush everything complete, written on this core or another (a flush writes a line
  //    back from wherever it is cached), then fence this core's flushes.
  const Lsn to = completed_lsn();
  area_.flush(from, to - from);
  device_.fence();
  persisted_.store(to, std::memory_order_release);
  bump(fences_, 1);  // under persist_latch_
}

void LogManager::make_room(std::unique_lock<std::mutex>& lock, std::uint64_t size,
                           LogRecordType type) {
  // 1. A record too large for an empty log is the caller's error, not a full log.
  if (size + reserve_for(type) > area_.capacity())
    fail("log record of {} bytes does not fit a log of {} bytes", size, area_.capacity());
  while (!fits(end_lsn(), size, type)) {
    // 2. Without a callback, or from inside it, nothing can free space.
    if (!on_full_ || on_full_thread_ == std::this_thread::get_id())
      fail("log full: {} of {} bytes in use, a record of {} bytes does not fit",
           end_lsn() - start_lsn(), area_.capacity(), size);
    // 3. Another thread may be checkpointing already.
    if (on_full_running_) {
      on_full_done_.wait(lock, [this] { return !on_full_running_; });
      continue;
    }
    // 4. Checkpoint without the lock (it appends and truncates). Other appenders may use up
    //    the space before this one gets the lock back: then checkpoint again, as long as the
    //    checkpoints free something.
    on_full_running_ = true;
    on_full_thread_ = std::this_thread::get_id();
    const auto finish = [this] {
      on_full_running_ = false;
      on_full_thread_ = {};
      on_full_done_.notify_all();
    };
    const Lsn start_before = start_lsn();
    const std::function<void()> on_full = on_full_;
    lock.unlock();
    try {
      on_full();
    } catch (...) {
      lock.lock();
      finish();
      throw;
    }
    lock.lock();
    finish();
    if (!fits(end_lsn(), size, type) && start_lsn() == start_before)
      fail("log full: {} of {} bytes still in use after the on_full callback freed nothing",
           end_lsn() - start_lsn(), area_.capacity());
  }
}

void LogManager::set_on_full(std::function<void()> on_full) {
  std::lock_guard lock(mutex_);
  on_full_ = std::move(on_full);
}

std::uint64_t LogManager::free_bytes() const {
  const std::uint64_t used = end_lsn() - start_lsn() + checkpoint_reserve_;
  return used >= area_.capacity() ? 0 : area_.capacity() - used;
}

void LogManager::truncate_before(Lsn lsn) {
  std::lock_guard lock(mutex_);
  // Records appended from here on are not this caller's concern; those before must be whole
  // to be checked and durable before the header drops anything.
  const Lsn end = end_lsn();
  if (lsn < start_lsn() || lsn > end)
    fail("log: cannot truncate before LSN {}, outside the log [{}, {}]", lsn, start_lsn(), end);
  if (lsn == start_lsn()) return;
  persist_before(end);
  if (lsn != end && !is_record_start_locked(lsn))
    fail("log: cannot truncate before LSN {}, not the start of a record", lsn);
  write_header_locked(lsn, checkpoint_ >= lsn ? checkpoint_ : kNoLsn);
}

void LogManager::complete_checkpoint(Lsn checkpoint_begin_lsn, Lsn keep_from, bool beside) {
  std::lock_guard lock(mutex_);
  // Everything the header will point at must be whole to be checked, and durable before the
  // header names it.
  const Lsn end = end_lsn();
  persist_before(end);
  const Lsn start = start_lsn();
  if (checkpoint_begin_lsn < start || checkpoint_begin_lsn >= end ||
      !is_record_start_locked(checkpoint_begin_lsn))
    fail("log: checkpoint LSN {} is not a record of the log [{}, {})", checkpoint_begin_lsn, start,
         end);
  if (keep_from < start || keep_from > checkpoint_begin_lsn ||
      (keep_from != start && !is_record_start_locked(keep_from)))
    fail("log: cannot keep the log from LSN {}: not a record in [{}, {}]", keep_from, start,
         checkpoint_begin_lsn);
  write_header_locked(keep_from, checkpoint_begin_lsn);
  bump(checkpoints_, 1);  // under mutex_
  device_.log_counters().checkpoints.fetch_add(1, std::memory_order_relaxed);
  if (beside) device_.log_counters().checkpoints_beside.fetch_add(1, std::memory_order_relaxed);
}

void LogManager::raise_end_bound_locked(Lsn record_end) {
  // The header is durable before any byte past the old bound is written (end_bound_ holds
  // the fast path back until then): a crash that tears it leaves the other copy, whose bound
  // covers everything written so far.
  write_header_locked(start_lsn(), checkpoint_, record_end + end_bound_step_);
}

void LogManager::write_header_locked(Lsn start, Lsn checkpoint) {
  write_header_locked(start, checkpoint, end_bound());
}

void LogManager::write_header_locked(Lsn start, Lsn checkpoint, Lsn end_bound) {
  assert(end_bound >= end_lsn());
  LogHeader header{};
  header.magic = kLogMagic;
  header.version = kLogFormatVersion;
  header.generation = generation_ + 1;
  header.log_id = log_id_;
  header.capacity = area_.capacity();
  header.start_lsn = start;
  header.checkpoint_lsn = checkpoint;
  header.end_bound = end_bound;
  header.epoch = epoch_;
  header.checksum = header.compute_checksum();
  LogHeader* copy = &headers_[header.generation % kLogHeaderCopies];
  device_.write_log(reinterpret_cast<std::byte*>(copy), &header, sizeof(header));
  device_.log_counters().header_lines_written.fetch_add(1, std::memory_order_relaxed);
  device_.persist(copy, sizeof(header));
  generation_ = header.generation;
  start_.store(start, std::memory_order_release);
  end_bound_.store(end_bound, std::memory_order_release);
  checkpoint_ = checkpoint;
}

bool LogManager::is_record_start_locked(Lsn lsn) const {
  LogRecordHeader header;
  std::span<const std::byte> payload;
  std::vector<std::byte> buffer;
  return area_.check(lsn, {completed_lsn(), 0, epoch_}, header, payload, buffer);
}

LogCursor LogManager::read_from(Lsn lsn) const {
  // The complete records; a checkpoint running beside appends may move the start on.
  advance();
  const Lsn start = start_lsn();
  const Lsn end = completed_lsn();
  if (lsn < start || lsn > end)
    fail("log: cannot read from LSN {}, outside the log [{}, {}]", lsn, start, end);
  return LogCursor(area_, lsn, end, LogCursor::End::kKnown, epoch_);
}

LogRecord LogManager::record_at(Lsn lsn, std::vector<std::byte>& payload) const {
  auto cursor = read_from(lsn);
  auto record = cursor.next();
  if (!record) fail("log: no record at LSN {}, the end of the log", lsn);
  payload.assign(record->payload.begin(), record->payload.end());
  record->payload = payload;
  return *record;
}

LogCursor LogManager::read_from_start() const { return read_from(start_lsn()); }

LogCursor LogManager::read_from_checkpoint() const {
  const Lsn checkpoint = checkpoint_lsn();
  return read_from(checkpoint != kNoLsn ? checkpoint : start_lsn());
}

Lsn LogManager::checkpoint_lsn() const {
  std::lock_guard lock(mutex_);
  return checkpoint_;
}

LogStats LogManager::stats() const {
  LogStats total;
  for (const AppendCounts& counts : appends_) {
    total.records += counts.records.load(std::memory_order_relaxed);
    total.bytes += counts.bytes.load(std::memory_order_relaxed);
  }
  total.fences = fences_.load(std::memory_order_relaxed);
  total.checkpoints = checkpoints_.load(std::memory_order_relaxed);
  return total;
}

}  // namespace tristore
