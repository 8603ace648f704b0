#include "nvm/nvm_layout.hpp"

namespace tristore {

std::uint32_t NvmSuperblock::compute_checksum() const {
  NvmSuperblock copy = *this;
  copy.checksum = 0;
  return crc32c(&copy, sizeof(copy));
}

std::uint64_t NvmLayout::max_slots(std::uint64_t file_bytes, std::uint64_t log_bytes) {
  const std::uint64_t fixed = kNvmSuperblockBytes + log_bytes;
  if (file_bytes <= fixed) return 0;
  // Each slot costs its page and its header line; the header array's padding may cost one less.
  std::uint64_t slots = (file_bytes - fixed) / (kPageSize + sizeof(NvmSlotHeaderLine));
  while (slots > 0 && compute(slots, log_bytes).end > file_bytes) --slots;
  return slots;
}

}  // namespace tristore
