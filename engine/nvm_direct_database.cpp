#include "engine/nvm_direct_database.hpp"

#include <chrono>
#include <cstring>

#include "common/error.hpp"
#include "common/page_format.hpp"
#include "emulation/nvm_persistence.hpp"
#include "engine/database_over.hpp"
#include "engine/settle_slots.hpp"
#include "engine/storage_files.hpp"
#include "tiers/nvm_direct_access.hpp"

namespace tristore {

namespace {

class NvmDirectDatabase final : public DatabaseOver<NvmDirectAccess> {
 public:
  NvmDirectDatabase(const Config& config, std::unique_ptr<NvmTier> tier,
                    std::unique_ptr<NvmDirectAccess> access, std::unique_ptr<LogManager> log,
                    Catalog catalog)
      : DatabaseOver(config, *access, std::move(catalog), log.get(), false),
        tier_(std::move(tier)),
        access_owner_(std::move(access)),
        log_(std::move(log)) {
    transactions_.set_beside_change_bound(TransactionManager::kInPlaceBesideChangeBound);
  }
  ~NvmDirectDatabase() override {
    if (crash_on_close_) return;
    try {
      transactions_.checkpoint();
    } catch (const Error&) {
      // A destructor cannot report; restart recovers from the log.
    }
  }

  Counters collect_counters() const override {
    Counters total = tier_->device().counters();
    total += access_owner_->counters();
    return total;
  }
  const WearCounters* nvm_wear() const override { return tier_->device().wear(); }
  bool nvm_is_pmem() const override { return tier_->device().is_pmem(); }
  std::string_view nvm_persistence() const override {
    return nvm_persistence_name(tier_->device().persistence());
  }
  CrashSimulator* nvm_crash_simulator() override { return tier_->device().crash_simulator(); }
  MemoryUsage collect_memory_usage() const override {
    return MemoryUsage{.dram_bytes = 0,
                       .dram_limit_bytes = config_.dram_bytes,
                       .page_table_bytes = 0,
                       .nvm_bytes = tier_->slots_in_use() * kPageSize,
                       .ssd_bytes = 0};
  }

  void recover(double log_open_seconds) {
    RestartReport& report = transactions_.restart_report();
    report.log_open_seconds = log_open_seconds;
    transactions_.recover(report);
  }

 protected:
  void before_create_table() override {
    if (catalog_.entries().size() >= Catalog::capacity(tier_->metadata_area().size()))
      fail("nvm-direct: the catalog is full ({} tables)", catalog_.entries().size());
  }

  // Pages are persisted in place when each operation ends; the catalog remains, and new
  // checksums for the pages changed since the last checkpoint. Swips are page ids here, so
  // the roots need no fix to be saved.
  void checkpoint_pages() override {
    catalog_.save(tier_->metadata_area(), [](Swip& root) { return root.page_id(); });
    tier_->device().persist(tier_->metadata_area().data(), tier_->metadata_area().size());
    tier_->set_claim_generation(catalog_.sequence());
    tier_->seal_pages();
  }

  void trust_page(PageId page_id) override {
    if (page_id < tier_->slot_count()) tier_->trust_content(static_cast<SlotId>(page_id));
  }

  // In place; pages are normally current already (their LSN says so). A freed slot's page is
  // skipped: it was freed later.
  void redo(Lsn lsn, const RedoPageBytes& entry, std::span<const std::byte> bytes) override {
    if (entry.offset == kRedoRootEntry) return redo_root(bytes, entry.page_id);
    if (entry.offset == kRedoNewPageEntry) {
      // A new page: zeroed after its header; the ranges written to it follow.
      static constexpr std::byte kZeros[kPageSize] = {};
      return redo(lsn, {entry.page_id, kPageHeaderSize, kPageSize - kPageHeaderSize},
                  {kZeros, kPageSize - kPageHeaderSize});
    }
    std::byte* page = slot_of(entry, lsn);
    if (page == nullptr) return;
    Lsn page_lsn;
    std::memcpy(&page_lsn, page + offsetof(PageHeader, lsn), sizeof(Lsn));
    if (page_lsn > lsn) return;  // equal: another entry of the same operation
    write_persisted(page + entry.offset, bytes);
    tier_->device().write(page + offsetof(PageHeader, lsn), &lsn, sizeof(lsn));
    tier_->device().persist(page + offsetof(PageHeader, lsn), sizeof(lsn));
  }

  void restore_before_image(const RedoPageBytes& entry, std::span<const std::byte> bytes) override {
    std::byte* page = slot_of(entry, kNoLsn);
    if (page != nullptr) write_persisted(page + entry.offset, bytes);
  }

  // A slot is a page's only home here: freeing it gives the page back.
  std::uint64_t settle_allocations(const LoggedAllocations& logged) override {
    const std::vector<SlotId> slots = settle_slots(*tier_, logged, catalog_.sequence());
    tier_->free_slots(slots);
    return slots.size();
  }
  void free_with_next_catalog(PageId page) override {
    tier_->free_with_catalog(static_cast<SlotId>(page));
  }

 private:
  std::byte* slot_of(const RedoPageBytes& entry, Lsn lsn) {
    if (entry.page_id >= tier_->slot_count() || entry.offset > kPageSize ||
        entry.length > kPageSize - entry.offset)
      fail("log: corrupt page entry for page {} at LSN {}", entry.page_id, lsn);
    const auto slot = static_cast<SlotId>(entry.page_id);
    if (!tier_->header_valid(slot) || tier_->header(slot).is_free()) return nullptr;
    return tier_->slot(slot);
  }
  void write_persisted(std::byte* to, std::span<const std::byte> bytes) {
    tier_->note_changed_in_place(tier_->slot_of(to));
    tier_->device().write(to, bytes.data(), bytes.size());
    tier_->device().persist(to, bytes.size());
  }

  std::unique_ptr<NvmTier> tier_;
  std::unique_ptr<NvmDirectAccess> access_owner_;
  std::unique_ptr<LogManager> log_;
};

}  // namespace

std::unique_ptr<Database> open_nvm_direct_database(const Config& config) {
  const bool create = creates_files(config);
  std::unique_ptr<NvmTier> tier = open_nvm_tier(config, create);
  // The catalog is read, and a damaged one refused, before the log's open writes anything;
  // the slot header lines a crash left half mirrored are mended after it.
  Catalog catalog = create ? Catalog{} : Catalog::load(tier->metadata_area());
  tier->set_claim_generation(catalog.sequence());
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<LogManager> log = create ? LogManager::create(tier->device(), tier->log_area())
                                           : LogManager::open(tier->device(), tier->log_area());
  const double log_open_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  tier->mend_header_mirrors();
  auto access = std::make_unique<NvmDirectAccess>(*tier);
  auto database = std::make_unique<NvmDirectDatabase>(config, std::move(tier), std::move(access),
                                                      std::move(log), std::move(catalog));
  if (create)
    database->checkpoint();
  else
    database->recover(log_open_seconds);
  return database;
}

}  // namespace tristore
