#pragma once
// The buffer-managed architectures, one BufferManager each (tiers/buffer_manager.hpp):
//   3tier      DRAM + NVM + SSD, the switches of Config (cache-line grained, mini pages, swizzling)
//   basic-nvm  DRAM + NVM: page-grained cache, every page's home is its NVM slot
//   ssd-bm     DRAM + SSD: page-grained cache
// The catalog lives in the SSD metadata area (3tier, ssd-bm) or the NVM one (basic-nvm) and is
// written when the database closes, after every page has been flushed.
#include <cstdint>
#include <memory>

#include "engine/config.hpp"
#include "engine/database.hpp"

namespace tristore {

// The B-tree holds a root-to-leaf path of guards at most; eight frames leave room beside it.
inline constexpr std::uint64_t kMinimumBufferFrames = 8;

std::unique_ptr<Database> open_buffered_database(const Config& config);

}  // namespace tristore
