#include "engine/nvm_direct_database.hpp"

#include "common/error.hpp"
#include "engine/database_over.hpp"
#include "engine/storage_files.hpp"
#include "tiers/nvm_direct_access.hpp"

namespace tristore {

namespace {

class NvmDirectDatabase final : public DatabaseOver<NvmDirectAccess> {
 public:
  NvmDirectDatabase(const Config& config, std::unique_ptr<NvmTier> tier,
                    std::unique_ptr<NvmDirectAccess> access, Catalog catalog)
      : DatabaseOver(config, *access, std::move(catalog)),
        tier_(std::move(tier)),
        access_owner_(std::move(access)) {}
  ~NvmDirectDatabase() override { save_catalog(); }

  Counters counters() const override { return tier_->device().counters(); }
  const WearCounters* nvm_wear() const override { return tier_->device().wear(); }
  MemoryUsage memory_usage() const override {
    return MemoryUsage{.dram_bytes = 0,
                       .dram_limit_bytes = config_.dram_bytes,
                       .page_table_bytes = 0,
                       .nvm_bytes = tier_->slots_in_use() * kPageSize,
                       .ssd_bytes = 0};
  }

 protected:
  Swip& create_table_root(std::string_view name, std::size_t key_size,
                          std::size_t value_size) override {
    if (catalog_.entries().size() >= Catalog::capacity(tier_->metadata_area().size()))
      fail("nvm-direct: the catalog is full ({} tables)", catalog_.entries().size());
    Swip& root = DatabaseOver::create_table_root(name, key_size, value_size);
    save_catalog();
    return root;
  }

 private:
  // Swips are page ids here, so the roots need no fix to be saved.
  void save_catalog() {
    catalog_.save(tier_->metadata_area(), [](Swip& root) { return root.page_id(); });
    tier_->device().persist(tier_->metadata_area().data(), tier_->metadata_area().size());
  }

  std::unique_ptr<NvmTier> tier_;
  std::unique_ptr<NvmDirectAccess> access_owner_;
};

}  // namespace

std::unique_ptr<Database> open_nvm_direct_database(const Config& config) {
  std::unique_ptr<NvmTier> tier = open_nvm_tier(config);
  Catalog catalog = config.create ? Catalog{} : Catalog::load(tier->metadata_area());
  auto access = std::make_unique<NvmDirectAccess>(*tier);
  return std::make_unique<NvmDirectDatabase>(config, std::move(tier), std::move(access),
                                             std::move(catalog));
}

}  // namespace tristore
