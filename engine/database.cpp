#include "engine/database.hpp"

#include "common/error.hpp"
#include "engine/main_memory_database.hpp"
#include "engine/nvm_direct_database.hpp"

namespace tristore {

std::unique_ptr<Database> Database::open(const Config& config) {
  switch (config.architecture) {
    case Architecture::kMainMemory:
      return open_main_memory_database(config);
    case Architecture::kNvmDirect:
      return open_nvm_direct_database(config);
    case Architecture::kBasicNvm:
    case Architecture::kSsdBm:
    case Architecture::kThreeTier:
      break;
  }
  fail("architecture '{}' is not available in this build yet",
       architecture_name(config.architecture));
}

}  // namespace tristore
