#include "engine/database.hpp"

#include "common/error.hpp"
#include "engine/buffered_database.hpp"
#include "engine/main_memory_database.hpp"
#include "engine/nvm_direct_database.hpp"
#include "engine/transaction_manager.hpp"

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
      return open_buffered_database(config);
  }
  fail("unknown architecture {}", static_cast<int>(config.architecture));
}

Transaction Database::begin() {
  transactions().checkpoint_if_due();  // holding nothing yet
  OperationLatch& latch = transactions().latch();
  if (latch.alone_here()) {  // cheaper for a thread alone (OperationLatch::alone_here)
    const OperationLatch::Exclusive latched(latch);
    return transactions().begin();
  }
  const OperationLatch::Changes latched(latch);
  return transactions().begin();
}

void Database::checkpoint() {
  const OperationLatch::Exclusive latched(transactions().latch());
  transactions().checkpoint();
}

Counters Database::counters() const {
  const OperationLatch::Exclusive latched(transactions().latch(), OperationLatch::Purpose::kRead);
  return collect_counters();
}

MemoryUsage Database::memory_usage() const {
  const OperationLatch::Exclusive latched(transactions().latch(), OperationLatch::Purpose::kRead);
  return collect_memory_usage();
}

const RestartReport& Database::restart_report() const { return transactions().restart_report(); }

}  // namespace tristore
