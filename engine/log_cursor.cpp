#include "engine/log_cursor.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "common/error.hpp"

namespace tristore {

LogCursor::LogCursor(LogArea area, Lsn from, Lsn limit, End end, std::uint32_t max_epoch)
    : area_(area),
      from_(from),
      position_(from),
      limit_(limit),
      end_known_(end == End::kKnown),
      max_epoch_(max_epoch) {}

std::optional<LogRecord> LogCursor::next() {
  if (at_end_ || (end_known_ && position_ == limit_)) return std::nullopt;
  LogRecordHeader header;
  std::span<const std::byte> payload;
  const LogArea::Expectation expect{limit_, min_epoch_, max_epoch_};
  if (!area_.check(position_, expect, header, payload, buffer_)) [[unlikely]]
    return end_of_log_at_invalid_record();

  const LogRecord record{position_,   position_ + log_record_size(header.payload_size),
                         header.txn,  header.prev_lsn,
                         header.type, payload};
  position_ = record.next_lsn;
  min_epoch_ = header.epoch;
  return record;
}

std::optional<LogRecord> LogCursor::end_of_log_at_invalid_record() {
  // 1. In a log whose end is known every record before it was written whole.
  if (end_known_) {
    if (position_ == from_)
      fail("log: no valid record at LSN {} (not the start of a record, or corrupt)", position_);
    fail("log corrupt: invalid record at LSN {} before the end of the log at LSN {}", position_,
         limit_);
  }
  // 2. Recovery: a torn tail ends the log, unless a later record proves this one persisted.
  if (const Lsn witness = find_record_persisted_after(position_); witness != kNoLsn)
    fail(
        "log corrupt: invalid record at LSN {}, yet the record at LSN {} was appended after it "
        "had been persisted",
        position_, witness);
  at_end_ = true;
  return std::nullopt;
}

Lsn LogCursor::find_record_persisted_after(Lsn invalid) const {
  // Restart runs this up to the header's end bound (about one bound step), walking the
  // area's words in runs up to the wrap point instead of mapping each candidate to its offset.
  constexpr std::uint64_t kLsnField = offsetof(LogRecordHeader, lsn);
  static_assert(kLsnField % kLogRecordAlignment == 0 && kLogRecordAlignment == sizeof(Lsn));
  LogRecordHeader header;
  std::span<const std::byte> payload;
  const LogArea::Expectation expect{limit_, 0, max_epoch_};
  Lsn lsn = invalid + kLogRecordAlignment;
  while (lsn + sizeof(LogRecordHeader) <= limit_) {
    // 1. Candidates [lsn, lsn + run * 8): their LSN fields lie contiguous in the area.
    const std::uint64_t candidates =
        (limit_ - sizeof(LogRecordHeader) - lsn) / kLogRecordAlignment + 1;
    const std::uint64_t run =
        std::min(candidates, area_.contiguous(lsn + kLsnField) / kLogRecordAlignment);
    const std::byte* fields = area_.at(lsn + kLsnField);
    // 2. A candidate is a word that holds its own LSN; only those are checked in full.
    for (std::uint64_t i = 0; i < run; ++i) {
      Lsn stored;
      std::memcpy(&stored, fields + i * kLogRecordAlignment, sizeof(stored));
      const Lsn candidate = lsn + i * kLogRecordAlignment;
      if (stored != candidate) continue;
      if (area_.check(candidate, expect, header, payload, probe_buffer_) &&
          header.persisted_lsn > invalid)
        return candidate;
    }
    lsn += run * kLogRecordAlignment;
  }
  return kNoLsn;
}

}  // namespace tristore
