#include "engine/buffered_database.hpp"

#include "common/error.hpp"
#include "engine/database_over.hpp"
#include "engine/storage_files.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/frame_pool.hpp"

namespace tristore {

namespace {

class BufferedDatabase final : public DatabaseOver<BufferManager> {
 public:
  BufferedDatabase(const Config& config, std::unique_ptr<NvmTier> nvm,
                   std::unique_ptr<SsdPageFile> ssd, std::unique_ptr<BufferManager> manager,
                   Catalog catalog)
      : DatabaseOver(config, *manager, std::move(catalog)),
        nvm_(std::move(nvm)),
        ssd_(std::move(ssd)),
        manager_(std::move(manager)) {}

  ~BufferedDatabase() override {
    try {
      close();
    } catch (const Error&) {
      // A destructor cannot report; the files stay as the last successful flush left them.
    }
  }

  Counters counters() const override { return manager_->counters(); }
  const WearCounters* nvm_wear() const override { return nvm_ ? nvm_->device().wear() : nullptr; }
  MemoryUsage memory_usage() const override {
    BufferMemoryUsage usage = manager_->memory_usage();
    return MemoryUsage{.dram_bytes = usage.dram_bytes_used,
                       .dram_limit_bytes = usage.dram_budget_bytes,
                       .page_table_bytes = usage.page_table_bytes + usage.admission_set_bytes,
                       .nvm_bytes = nvm_ ? nvm_->slots_in_use() * kPageSize : 0,
                       .ssd_bytes = ssd_ ? ssd_->pages_in_use() * kPageSize : 0};
  }

 protected:
  Swip& create_table_root(std::string_view name, std::size_t key_size,
                          std::size_t value_size) override {
    if (catalog_.entries().size() >= Catalog::capacity(metadata_area().size()))
      fail("{}: the catalog is full ({} tables)", architecture_name(config_.architecture),
           catalog_.entries().size());
    return DatabaseOver::create_table_root(name, key_size, value_size);
  }

 private:
  std::span<std::byte> metadata_area() { return ssd_ ? ssd_->metadata() : nvm_->metadata_area(); }

  // 1. Catalog with the roots' page ids (a swizzled root is fixed once to learn its id).
  // 2. Every DRAM page down to NVM or SSD (flush_all syncs the SSD, metadata included).
  // 3. basic-nvm: persist the NVM metadata area.
  void close() {
    catalog_.save(metadata_area(), [&](Swip& root) {
      return root.is_swizzled() ? manager_->fix(root, nullptr).page_id() : root.page_id();
    });
    manager_->flush_all();
    if (ssd_ == nullptr)
      nvm_->device().persist(nvm_->metadata_area().data(), nvm_->metadata_area().size());
  }

  std::unique_ptr<NvmTier> nvm_;
  std::unique_ptr<SsdPageFile> ssd_;
  std::unique_ptr<BufferManager> manager_;
};

}  // namespace

std::unique_ptr<Database> open_buffered_database(const Config& config) {
  // 1. A DRAM budget that can hold the B-tree's working set.
  const std::uint64_t minimum = kMinimumBufferFrames * FramePool::kSlabBytes;
  if (config.dram_bytes < minimum)
    fail("{}: DRAM budget of {} bytes is too small: the B-tree needs at least {} frames ({} KiB)",
         architecture_name(config.architecture), config.dram_bytes, kMinimumBufferFrames,
         minimum / 1024);
  // 2. The tiers of this architecture; NVM and SSD files of one database share its id.
  const bool three_tier = config.architecture == Architecture::kThreeTier;
  const bool uses_nvm = three_tier || config.architecture == Architecture::kBasicNvm;
  const bool uses_ssd = three_tier || config.architecture == Architecture::kSsdBm;
  std::unique_ptr<NvmTier> nvm = uses_nvm ? open_nvm_tier(config) : nullptr;
  std::unique_ptr<SsdPageFile> ssd =
      uses_ssd ? open_ssd_file(config, nvm ? nvm->database_id() : 0) : nullptr;
  // 3. The catalog of a reopened database.
  Catalog catalog;
  if (!config.create) catalog = Catalog::load(ssd ? ssd->metadata() : nvm->metadata_area());
  // 4. The buffer manager; opening rebuilds its page table from the NVM slot headers.
  BufferManagerOptions options;
  options.dram_bytes = config.dram_bytes;
  options.nvm = nvm.get();
  options.ssd = ssd.get();
  options.cache_line_grained = three_tier && config.cache_line_grained;
  options.mini_pages = three_tier && config.mini_pages;
  options.swizzling = three_tier && config.swizzling;
  options.admission_set_size = config.admission_set_size;
  auto manager = std::make_unique<BufferManager>(options);
  return std::make_unique<BufferedDatabase>(config, std::move(nvm), std::move(ssd),
                                            std::move(manager), std::move(catalog));
}

}  // namespace tristore
