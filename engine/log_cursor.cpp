#include "engine/log_cursor.hpp"

#include "common/error.hpp"

namespace tristore {

LogCursor::LogCursor(LogArea area, Lsn from, Lsn start, std::optional<Lsn> known_end,
                     std::uint32_t max_epoch)
    : area_(area),
      from_(from),
      position_(from),
      limit_(known_end.value_or(start + area.capacity())),
      end_known_(known_end.has_value()),
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
  LogRecordHeader header;
  std::span<const std::byte> payload;
  const LogArea::Expectation expect{limit_, 0, max_epoch_};
  for (Lsn lsn = invalid + kLogRecordAlignment; lsn + sizeof(LogRecordHeader) <= limit_;
       lsn += kLogRecordAlignment) {
    if (area_.stored_lsn(lsn) != lsn) continue;
    if (area_.check(lsn, expect, header, payload, probe_buffer_) && header.persisted_lsn > invalid)
      return lsn;
  }
  return kNoLsn;
}

}  // namespace tristore
