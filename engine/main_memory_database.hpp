#pragma once
// The main-memory architecture: every page in DRAM, nothing on disk (volatile).
#include <cstdint>
#include <memory>

#include "engine/config.hpp"
#include "engine/database.hpp"

namespace tristore {

// A few pages per table: one root leaf, and room for the first splits.
inline constexpr std::uint64_t kMinimumMainMemoryBytes = 64 * 1024;

std::unique_ptr<Database> open_main_memory_database(const Config& config);

}  // namespace tristore
