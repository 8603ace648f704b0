#include "engine/log_area.hpp"

namespace tristore {

bool LogArea::check(Lsn lsn, const Expectation& expect, LogRecordHeader& header,
                    std::span<const std::byte>& payload, std::vector<std::byte>& buffer) const {
  // 1. A header must fit before the limit, and name this position: stale records of an
  //    earlier lap (or of a log formatted before this one) carry another LSN.
  if (lsn >= expect.limit || expect.limit - lsn < sizeof(LogRecordHeader)) return false;
  if (stored_lsn(lsn) != lsn) return false;
  read(lsn, &header, sizeof(header));

  // 2. Fields a valid record cannot have.
  const auto type = static_cast<std::uint8_t>(header.type);
  if (type == 0 || type > kLastLogRecordType) return false;
  if (header.epoch < expect.min_epoch || header.epoch > expect.max_epoch) return false;
  if (header.persisted_lsn > lsn) return false;
  if (header.payload_size > expect.limit - lsn - sizeof(LogRecordHeader)) return false;

  // 3. The checksum over header and payload, read in place unless it wraps around.
  const Lsn payload_lsn = lsn + sizeof(LogRecordHeader);
  if (contiguous(payload_lsn) >= header.payload_size) {
    payload = {at(payload_lsn), header.payload_size};
    if (!payload.empty()) device_->charge_read(at(payload_lsn), payload.size());
  } else {
    buffer.resize(header.payload_size);
    read(payload_lsn, buffer.data(), header.payload_size);
    payload = buffer;
  }
  const std::span<const std::byte> parts[] = {payload};
  return checksum(header, parts) == header.checksum;
}

}  // namespace tristore
