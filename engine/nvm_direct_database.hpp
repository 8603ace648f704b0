#pragma once
// The nvm-direct architecture: every page in an NVM slot, updated in place and persisted with
// flush + fence; no DRAM cache. The catalog lives in the NVM metadata area.
#include <memory>

#include "engine/config.hpp"
#include "engine/database.hpp"

namespace tristore {

std::unique_ptr<Database> open_nvm_direct_database(const Config& config);

}  // namespace tristore
