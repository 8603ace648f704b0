#pragma once
// Opening the NVM and SSD files of a database from its Config: create fresh ones, or open
// existing ones that must belong to the same database.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/config.hpp"
#include "nvm/nvm_tier.hpp"
#include "ssd/ssd_page_file.hpp"

namespace tristore {

// Config::ssd_path, or $TMPDIR (else /tmp) + "/tristore.ssd" when it is empty.
std::string effective_ssd_path(const Config& config);

// The NVM log area: an eighth of the NVM file, between 64 KiB and 128 MiB. Small test and
// experiment configurations keep most of their NVM for pages; a large log makes checkpoints
// (each writes every dirty page back, and the next change of each page logs its full image)
// rare: with 16 MiB, TPC-C checkpointed every ~80 transactions.
std::uint64_t nvm_log_bytes(std::uint64_t nvm_bytes);

// database_id: 0 = a new random id (create) or any (open).
// log_bytes: 0 = nvm_log_bytes(config.nvm_bytes).
std::unique_ptr<NvmTier> open_nvm_tier(const Config& config, std::uint64_t database_id = 0,
                                       std::uint64_t log_bytes = 0);
// ssd-bm: an NVM file at Config::nvm_path with the log area and no room for pages beyond one slot.
std::unique_ptr<NvmTier> open_log_tier(const Config& config);
// witness: the NVM file that records the SSD file's newest durable metadata generation
// (engine/ssd_generation_witness.hpp); nullptr: none.
std::unique_ptr<SsdPageFile> open_ssd_file(const Config& config, std::uint64_t database_id = 0,
                                           NvmTier* witness = nullptr);

}  // namespace tristore
