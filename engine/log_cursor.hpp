#pragma once
// Reads log records in LSN order. Stops at the end of the log: the first record that is torn,
// stale or of an earlier epoch. A bad record with a record after it that was appended once the
// bad one had been persisted is corruption, not a torn tail: next() throws Error.
//
//   auto cursor = log.read_from_checkpoint();
//   while (auto record = cursor.next()) redo(*record);
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/log_area.hpp"
#include "engine/log_record.hpp"

namespace tristore {

class LogCursor {
 public:
  // kKnown: limit is the log's end (an open log). kSought: recovery looks for the end; no
  // record of the log ends beyond limit (the header's end bound, at most start + capacity).
  enum class End { kKnown, kSought };
  LogCursor(LogArea area, Lsn from, Lsn limit, End end, std::uint32_t max_epoch);

  // The next record, or nullopt at the end. Its payload is valid until the next call.
  std::optional<LogRecord> next();
  // Where the next record starts; after the last one, the end of the log.
  Lsn position() const { return position_; }
  // The epoch of the last record read (0 before any).
  std::uint32_t last_epoch() const { return min_epoch_; }

 private:
  std::optional<LogRecord> end_of_log_at_invalid_record();
  // An intact record after `invalid` whose persisted_lsn covers `invalid`, or kNoLsn.
  Lsn find_record_persisted_after(Lsn invalid) const;

  LogArea area_;
  Lsn from_;
  Lsn position_;
  Lsn limit_;
  bool end_known_;
  bool at_end_ = false;
  std::uint32_t min_epoch_ = 0;
  std::uint32_t max_epoch_;
  std::vector<std::byte> buffer_;  // payloads that wrap around the area's end
  mutable std::vector<std::byte> probe_buffer_;
};

}  // namespace tristore
