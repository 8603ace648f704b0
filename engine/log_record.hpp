#pragma once
// The write-ahead log's record format (docs/durability.md). A record is a 48-byte header and a
// payload, padded to 8 bytes, at LSN = its byte position in the log. The checksum covers
// header and payload, so a torn record at the tail fails it; the LSN field tells a record of
// this lap of the circular area from a stale one of an earlier lap.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "common/types.hpp"

namespace tristore {

using TxnId = std::uint64_t;

inline constexpr Lsn kNoLsn = 0;  // "none": page never logged, first record of a transaction
inline constexpr std::uint64_t kLogRecordAlignment = 8;  // NVM stores are atomic at 8 bytes

enum class LogRecordType : std::uint8_t {
  kRedoOperation = 1,  // one operation's page changes: (RedoPageBytes + bytes)*, atomic
  kTupleOperation,     // a transaction's table operation: its undo (UndoLogical + key +
                       // before-image), then its redo entries as in kRedoOperation
  kUndoLogical,        // UndoLogical + key + before-image, logged before the table changes
  kCommit,             // no payload; durable commit record = committed transaction
  kAbort,              // no payload; the transaction's undo is complete
  kCompensation,       // Compensation: one undo record has been applied
  kCheckpointBegin,    // no payload
  kCheckpointEnd,      // CheckpointEnd + ActiveTransaction[active_count]
  kPageBeforeImage,    // nvm-direct: RedoPageBytes + the bytes before an in-place change
  kUndoCopy,           // UndoCopy + a live undo payload, copied forward by a checkpoint
};
inline constexpr std::uint8_t kLastLogRecordType =
    static_cast<std::uint8_t>(LogRecordType::kUndoCopy);

// As stored in NVM, at an 8-byte aligned LSN.
struct LogRecordHeader {
  std::uint32_t checksum;      // crc32c, seeded by the log's id, of the bytes after it + payload
  std::uint32_t payload_size;  // bytes, without padding
  Lsn lsn;                     // this record's position: a stale record of an earlier lap differs
  Lsn persisted_lsn;           // the log's persisted end when appended (torn tail vs corruption)
  TxnId txn;
  Lsn prev_lsn;  // the transaction's previous record (ARIES undo chain) or kNoLsn
  LogRecordType type;
  std::uint8_t reserved[3];
  std::uint32_t epoch;  // opens of the log so far; never decreases along the log
};
static_assert(sizeof(LogRecordHeader) == 48);
static_assert(sizeof(LogRecordHeader) % kLogRecordAlignment == 0);

inline constexpr std::uint64_t log_record_size(std::uint64_t payload_size) {
  return (sizeof(LogRecordHeader) + payload_size + kLogRecordAlignment - 1) / kLogRecordAlignment *
         kLogRecordAlignment;
}

// A record as the reader yields it. payload stays valid until the reader moves on.
struct LogRecord {
  Lsn lsn;
  Lsn next_lsn;  // lsn + padded size: where the next record starts
  TxnId txn;
  Lsn prev_lsn;
  LogRecordType type;
  std::span<const std::byte> payload;
};

// Payload layouts. Fixed-size parts first, variable bytes after them.
struct RedoPageBytes {
  PageId page_id;
  std::uint32_t offset;  // within the page
  std::uint32_t length;  // after-image bytes that follow
};
enum class UndoOperation : std::uint8_t { kInsert = 1, kUpdate, kRemove };
struct UndoLogical {
  std::uint32_t table_id;
  UndoOperation operation;  // what was done; undo inverts it
  std::uint8_t reserved;
  std::uint16_t key_size;     // key bytes follow, then before_size bytes of before-image
  std::uint32_t before_size;  // 0 for an insert
  std::uint32_t reserved2;
};
// A checkpoint copies each live undo record of an unfinished transaction to after its begin
// record, so that the log can drop everything before it. The copy joins the transaction's
// prev_lsn chain; order_lsn (the LSN of the step's first record) keeps the undo order and
// tells copies of one step apart from others.
struct UndoCopy {
  Lsn order_lsn;  // an UndoLogical payload follows
};
struct Compensation {
  Lsn undo_next_lsn;  // the next record of this transaction still to undo (ARIES CLR)
  Lsn undone_lsn;     // the kUndoLogical or kUndoCopy record this one compensates
};
// Entries of a redo record that are no page bytes (RedoPageBytes::offset).
inline constexpr std::uint32_t kRedoRootEntry = 0xFFFFFFFF;   // page_id: new root; 4-byte table id
inline constexpr std::uint32_t kRedoFreedEntry = 0xFFFFFFFE;  // page_id was freed; no bytes
// page_id's leaf changed one entry: a LeafChange (btree/leaf_change.hpp) and its bytes follow.
inline constexpr std::uint32_t kRedoLeafEntry = 0xFFFFFFFD;
// page_id is new: a zeroed page carrying its id; the ranges written to it follow. No bytes.
inline constexpr std::uint32_t kRedoNewPageEntry = 0xFFFFFFFC;
struct CheckpointEnd {
  Lsn begin_lsn;
  std::uint64_t active_count;  // ActiveTransaction entries that follow
};
struct ActiveTransaction {
  TxnId txn;
  Lsn first_lsn;  // the log must be kept from here on while the transaction is active
  Lsn last_lsn;   // where its undo starts
};
static_assert(sizeof(RedoPageBytes) == 16 && sizeof(UndoLogical) == 16);

// An undo payload into `out`: header, then header.key_size key bytes, then the before-image
// (header.before_size bytes).
inline void encode_undo(std::vector<std::byte>& out, const UndoLogical& header, const void* key,
                        std::span<const std::byte> before) {
  out.resize(sizeof(header) + std::size_t{header.key_size} + before.size());
  std::memcpy(out.data(), &header, sizeof(header));
  std::memcpy(out.data() + sizeof(header), key, header.key_size);
  std::copy(before.begin(), before.end(), out.begin() + sizeof(header) + header.key_size);
}

// The bytes of the undo payload at the start of `payload` (UndoLogical, key, before-image);
// empty if they do not fit in it.
inline std::span<const std::byte> undo_prefix(std::span<const std::byte> payload) {
  UndoLogical undo;
  if (payload.size() < sizeof(undo)) return {};
  std::memcpy(&undo, payload.data(), sizeof(undo));
  const std::uint64_t size = sizeof(undo) + std::uint64_t{undo.key_size} + undo.before_size;
  if (size > payload.size()) return {};
  return payload.first(size);
}

// The redo entries of a kRedoOperation or kTupleOperation record (after the undo of the
// latter); empty for other types and for a tuple operation whose undo does not fit.
inline std::span<const std::byte> redo_entries(LogRecordType type,
                                               std::span<const std::byte> payload) {
  if (type == LogRecordType::kRedoOperation) return payload;
  if (type != LogRecordType::kTupleOperation) return {};
  const std::span<const std::byte> undo = undo_prefix(payload);
  return undo.empty() ? undo : payload.subspan(undo.size());
}

}  // namespace tristore
