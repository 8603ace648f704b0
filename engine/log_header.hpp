#pragma once
// The persisted header of the NVM log area. Two copies, one cache line each, written in turn:
// a torn header write (8-byte atomicity) spoils only the copy being written, and open takes
// the valid copy with the higher generation. No record extends beyond end_bound: appends
// persist a header with a higher bound before writing past it, so restart looks for the end of
// the log only up to there, not through the whole area.
//   [header copy 0: 64 B][header copy 1: 64 B][unused up to 256 B][records: circular]
#include <cstddef>
#include <cstdint>

#include "common/checksum.hpp"
#include "common/types.hpp"

namespace tristore {

inline constexpr std::uint64_t kLogMagic = 0x31474f4c45525453ull;  // "STRELOG1"
inline constexpr std::uint32_t kLogFormatVersion = 4;  // 3: end_bound; 4: tuple-level records
inline constexpr std::uint64_t kLogHeaderCopies = 2;
inline constexpr std::uint64_t kLogRecordAreaOffset = 256;
inline constexpr std::uint64_t kLogMinAreaBytes = 4096;

struct alignas(64) LogHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t checksum;    // crc32c of this struct with this field zero
  std::uint64_t generation;  // +1 per header write; copy generation % 2 is written
  std::uint64_t capacity;    // record area bytes
  Lsn start_lsn;             // oldest record still needed; at offset start_lsn % capacity
  Lsn checkpoint_lsn;        // last complete checkpoint's begin record, or kNoLsn (0)
  Lsn end_bound;             // no record of the log ends beyond it
  std::uint32_t log_id;      // random at creation; seeds record checksums
  std::uint32_t epoch;       // opens since creation: records carry it

  std::uint32_t compute_checksum() const {
    LogHeader copy = *this;
    copy.checksum = 0;
    return crc32c(&copy, sizeof(copy));
  }
  bool valid() const {
    return magic == kLogMagic && version == kLogFormatVersion && checksum == compute_checksum();
  }
};
static_assert(sizeof(LogHeader) == 64);
// Where every format version keeps them, so that open can name an older version.
static_assert(offsetof(LogHeader, version) == 8 && offsetof(LogHeader, checksum) == 12);
static_assert(kLogHeaderCopies * sizeof(LogHeader) <= kLogRecordAreaOffset);

}  // namespace tristore
