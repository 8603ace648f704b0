#include "engine/ssd_generation_witness.hpp"

#include <cstring>

#include "common/checksum.hpp"

namespace tristore {
namespace {

struct WitnessRecord {
  std::uint64_t generation;
  std::uint64_t check;  // crc32c of the generation, seeded: an all-zero record is not valid

  static std::uint64_t compute_check(std::uint64_t generation) {
    constexpr std::uint32_t kSeed = 0x55d6e47u;  // "SSD generation"
    return std::uint64_t{crc32c(&generation, sizeof(generation), kSeed)} | (1ull << 63);
  }
  bool valid() const { return check == compute_check(generation); }
};
static_assert(sizeof(WitnessRecord) == 16);

// At the start of the area, one 8-byte-aligned line.
WitnessRecord* records(const NvmTier& tier) {
  return reinterpret_cast<WitnessRecord*>(tier.metadata_area().data());
}

}  // namespace

std::optional<std::uint64_t> read_ssd_generation_witness(const NvmTier& tier) {
  std::optional<std::uint64_t> newest;
  for (int i = 0; i < 2; ++i) {
    WitnessRecord record;
    std::memcpy(&record, records(tier) + i, sizeof(record));
    if (record.valid() && record.generation % 2 == static_cast<std::uint64_t>(i) &&
        (!newest || record.generation > *newest))
      newest = record.generation;
  }
  return newest;
}

void record_ssd_generation_witness(NvmTier& tier, std::uint64_t generation) {
  const WitnessRecord record{generation, WitnessRecord::compute_check(generation)};
  WitnessRecord* target = records(tier) + generation % 2;
  tier.device().write(reinterpret_cast<std::byte*>(target), &record, sizeof(record));
  tier.device().persist(target, sizeof(record));
}

}  // namespace tristore
