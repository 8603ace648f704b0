#pragma once
// Opening the NVM and SSD files of a database from its Config: decide from Config::open_mode
// whether to create or open them, then create fresh ones or open existing ones that must
// belong to the same database and architecture.
#include <cstdint>
#include <memory>
#include <span>
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

// An NVM file's log area: the log's records and, for the buffered architectures (which write
// pages back in place), the double-write area after them (tiers/double_write_area.hpp).
struct LogAreaParts {
  std::span<std::byte> log;
  std::span<std::byte> double_write;  // empty for nvm-direct
};
LogAreaParts split_log_area(std::span<std::byte> area, Architecture architecture);

// Whether Database::open creates the architecture's files (true) or opens them (false), from
// Config::open_mode and which of them exist. Touches no file. Error (one line) when the NVM and
// SSD paths name the same file, when create-new finds a file, when open-existing misses one,
// and when open-or-create finds some of the files but not all.
bool creates_files(const Config& config);

// create: format new files (kCreateReplacing's truncation happens here, under the file's
// lock); otherwise open existing ones, validated before anything is written: architecture,
// database id (database_id 0: any), layout. log_bytes: 0 = nvm_log_bytes(config.nvm_bytes).
std::unique_ptr<NvmTier> open_nvm_tier(const Config& config, bool create,
                                       std::uint64_t database_id = 0, std::uint64_t log_bytes = 0);
// ssd-bm: an NVM file at Config::nvm_path with the log area and no room for pages beyond one slot.
std::unique_ptr<NvmTier> open_log_tier(const Config& config, bool create);
// witness: the NVM file that records the SSD file's newest durable metadata generation
// (engine/ssd_generation_witness.hpp); nullptr: none.
std::unique_ptr<SsdPageFile> open_ssd_file(const Config& config, bool create,
                                           std::uint64_t database_id = 0,
                                           NvmTier* witness = nullptr);

}  // namespace tristore
