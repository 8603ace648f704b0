#pragma once
// The circular record area of the NVM log: LSN -> offset (lsn % capacity), copies that wrap
// around the end, and the validity check every reader applies to a record.
#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "common/checksum.hpp"
#include "emulation/nvm_device.hpp"
#include "engine/log_record.hpp"

namespace tristore {

class LogArea {
 public:
  LogArea(NvmDevice& device, std::byte* records, std::uint64_t capacity, std::uint32_t seed)
      : device_(&device), records_(records), capacity_(capacity), seed_(seed) {
    assert(capacity % kLogRecordAlignment == 0);
  }

  NvmDevice& device() const { return *device_; }
  std::uint64_t capacity() const { return capacity_; }
  std::byte* at(Lsn lsn) const { return records_ + lsn % capacity_; }
  // Bytes from lsn up to the physical end of the area.
  std::uint64_t contiguous(Lsn lsn) const { return capacity_ - lsn % capacity_; }

  void write(Lsn lsn, const void* source, std::uint64_t length) {
    if (length == 0) return;  // an empty payload part may have no address at all
    const std::uint64_t first = std::min(length, contiguous(lsn));
    device_->write_log(at(lsn), source, first);
    if (first < length) [[unlikely]]
      device_->write_log(records_, static_cast<const std::byte*>(source) + first, length - first);
  }
  // The cache lines that [lsn, lsn + length) touches (length > 0).
  std::uint64_t lines(Lsn lsn, std::uint64_t length) const {
    const std::uint64_t first = std::min(length, contiguous(lsn));
    return device_->lines_touched(at(lsn), first) +
           (first < length ? device_->lines_touched(records_, length - first) : 0);
  }
  // Zeroes and persists [lsn, lsn + length): no stale record survives there.
  void erase(Lsn lsn, std::uint64_t length) {
    static constexpr std::byte kZeros[4096] = {};
    for (std::uint64_t done = 0; done < length;) {
      const std::uint64_t chunk = std::min({length - done, contiguous(lsn + done), sizeof(kZeros)});
      device_->write_log(at(lsn + done), kZeros, chunk);
      device_->flush(at(lsn + done), chunk);
      done += chunk;
    }
    device_->fence();
  }
  void flush(Lsn lsn, std::uint64_t length) {
    const std::uint64_t first = std::min(length, contiguous(lsn));
    device_->flush(at(lsn), first);
    if (first < length) [[unlikely]]
      device_->flush(records_, length - first);
  }
  void read(Lsn lsn, void* destination, std::uint64_t length) const {
    const std::uint64_t first = std::min(length, contiguous(lsn));
    device_->read(destination, at(lsn), first);
    if (first < length) [[unlikely]]
      device_->read(static_cast<std::byte*>(destination) + first, records_, length - first);
  }

  // The checksum a header with these fields and this payload must carry.
  std::uint32_t checksum(const LogRecordHeader& header,
                         std::span<const std::span<const std::byte>> payload) const {
    constexpr std::size_t kSkip = sizeof(header.checksum);
    std::uint32_t crc =
        crc32c(reinterpret_cast<const std::byte*>(&header) + kSkip, sizeof(header) - kSkip, seed_);
    for (const auto part : payload) crc = crc32c(part.data(), part.size(), crc);
    return crc;
  }

  // What a record must satisfy to be read as one.
  struct Expectation {
    Lsn limit;                // the record must end at or before this LSN
    std::uint32_t min_epoch;  // the previous record's epoch (epochs never decrease)
    std::uint32_t max_epoch;  // the log header's epoch
  };
  // True if a whole, intact record of this lap starts at lsn. Fills header and payload
  // (pointing into NVM, or into buffer where the payload wraps around).
  bool check(Lsn lsn, const Expectation& expect, LogRecordHeader& header,
             std::span<const std::byte>& payload, std::vector<std::byte>& buffer) const;

  // The LSN field of whatever lies at lsn, without checking anything: the cheap first test.
  Lsn stored_lsn(Lsn lsn) const {
    static_assert(offsetof(LogRecordHeader, lsn) % kLogRecordAlignment == 0);
    Lsn stored;
    std::memcpy(&stored, at(lsn + offsetof(LogRecordHeader, lsn)), sizeof(stored));
    return stored;
  }

 private:
  NvmDevice* device_;
  std::byte* records_;
  std::uint64_t capacity_;
  std::uint32_t seed_;
};

}  // namespace tristore
