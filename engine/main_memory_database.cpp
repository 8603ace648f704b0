#include "engine/main_memory_database.hpp"

#include "common/error.hpp"
#include "engine/database_over.hpp"
#include "tiers/main_memory_access.hpp"

namespace tristore {

namespace {

class MainMemoryDatabase final : public DatabaseOver<MainMemoryAccess> {
 public:
  MainMemoryDatabase(const Config& config, std::unique_ptr<MainMemoryAccess> memory)
      : DatabaseOver(config, *memory, Catalog{}, nullptr, false), memory_(std::move(memory)) {}

  Counters collect_counters() const override { return memory_->counters(); }
  MemoryUsage collect_memory_usage() const override {
    return MemoryUsage{.dram_bytes = memory_->bytes_in_use(),
                       .dram_limit_bytes = memory_->budget_bytes(),
                       .page_table_bytes = 0,
                       .nvm_bytes = 0,
                       .ssd_bytes = 0};
  }

 private:
  std::unique_ptr<MainMemoryAccess> memory_;
};

}  // namespace

std::unique_ptr<Database> open_main_memory_database(const Config& config) {
  if (config.dram_bytes < kMinimumMainMemoryBytes)
    fail("main-memory: DRAM budget of {} bytes is below the minimum of {} KiB", config.dram_bytes,
         kMinimumMainMemoryBytes / 1024);
  if (config.open_mode == OpenMode::kOpenExisting)
    fail("main-memory: the database is volatile, there is nothing to reopen");
  return std::make_unique<MainMemoryDatabase>(
      config, std::make_unique<MainMemoryAccess>(config.dram_bytes));
}

}  // namespace tristore
