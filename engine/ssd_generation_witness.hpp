#pragma once
// The newest SSD metadata generation known durable, kept in the NVM file's metadata area
// (3tier, ssd-bm: their catalog lives on SSD, so the NVM area is free). SsdPageFile::open falls
// back to an older superblock or bitmap copy when the newest fails its checksum; that is safe
// only when the newest was never completed (a crash inside sync), and this witness tells: a
// generation below it was superseded by one that sync reported done, so the older copy misses
// allocations the database relies on, and open gives an Error instead.
//
// Two 16-byte records {generation, check}; generation g goes to record g % 2, so a torn write
// leaves the other one (g - 1, still a true lower bound).
#include <cstdint>
#include <optional>

#include "nvm/nvm_tier.hpp"

namespace tristore {

// nullopt: no intact record (a file from before the witness, or a damaged area).
std::optional<std::uint64_t> read_ssd_generation_witness(const NvmTier& tier);
// Persists `generation` (flush + fence) after the SSD made it durable.
void record_ssd_generation_witness(NvmTier& tier, std::uint64_t generation);

}  // namespace tristore
