#include "engine/buffered_database.hpp"

#include <chrono>
#include <cstring>
#include <set>
#include <vector>

#include "common/error.hpp"
#include "common/page_format.hpp"
#include "emulation/nvm_persistence.hpp"
#include "engine/database_over.hpp"
#include "engine/settle_slots.hpp"
#include "engine/storage_files.hpp"
#include "ssd/ssd_crash_simulator.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/frame_pool.hpp"

namespace tristore {

namespace {

class BufferedDatabase final : public DatabaseOver<BufferManager> {
 public:
  BufferedDatabase(const Config& config, std::unique_ptr<NvmTier> nvm,
                   std::unique_ptr<NvmTier> log_tier, std::unique_ptr<SsdPageFile> ssd,
                   std::unique_ptr<LogManager> log, std::unique_ptr<DoubleWriteArea> double_write,
                   std::unique_ptr<BufferManager> manager, Catalog catalog)
      : DatabaseOver(config, *manager, std::move(catalog), log.get(), manager->options().swizzling),
        nvm_(std::move(nvm)),
        log_tier_(std::move(log_tier)),
        ssd_(std::move(ssd)),
        log_(std::move(log)),
        double_write_(std::move(double_write)),
        manager_(std::move(manager)) {
    // Readers holding the latch shared, and changes beside each other, read beside the buffer
    // manager's misses: frames it lets go wait for them to leave.
    manager_->share_with(&transactions_.latch().readers());
    manager_->change_beside(&transactions_.latch().changer_slots());
  }

  ~BufferedDatabase() override {
    if (crash_on_close_) return;
    try {
      transactions_.checkpoint();
    } catch (const Error&) {
      // A destructor cannot report; restart recovers from the log.
    }
  }

  Counters collect_counters() const override {
    Counters total = manager_->counters();
    if (log_tier_) total += log_tier_->device().counters();  // ssd-bm's log (log_bytes_written)
    return total;
  }
  const WearCounters* nvm_wear() const override { return nvm_ ? nvm_->device().wear() : nullptr; }
  bool nvm_is_pmem() const override { return nvm_ && nvm_->device().is_pmem(); }
  std::string_view nvm_persistence() const override {  // ssd-bm: its log's NVM file
    return nvm_persistence_name((nvm_ ? *nvm_ : *log_tier_).device().persistence());
  }
  CrashSimulator* nvm_crash_simulator() override {
    return (nvm_ ? *nvm_ : *log_tier_).device().crash_simulator();
  }
  SsdCrashSimulator* ssd_crash_simulator() override {
    return ssd_ ? ssd_->crash_simulator() : nullptr;
  }
  MemoryUsage collect_memory_usage() const override {
    BufferMemoryUsage usage = manager_->memory_usage();
    return MemoryUsage{.dram_bytes = usage.dram_bytes_used,
                       .dram_limit_bytes = usage.dram_budget_bytes,
                       .page_table_bytes = usage.page_table_bytes + usage.admission_set_bytes,
                       .nvm_bytes = nvm_ ? nvm_->slots_in_use() * kPageSize : 0,
                       .ssd_bytes = ssd_ ? ssd_->pages_in_use() * kPageSize : 0};
  }

  // Restart (docs/durability.md): the page table was rebuilt by the buffer manager.
  void recover(double page_table_seconds, double log_open_seconds,
               const DoubleWriteRestore& mended) {
    RestartReport& report = transactions_.restart_report();
    report.torn_pages_mended = mended.nvm_pages_mended + mended.ssd_pages_mended;
    report.page_table_rebuild_seconds = page_table_seconds;
    report.log_open_seconds = log_open_seconds;
    transactions_.recover(report);
  }

 protected:
  void before_create_table() override {
    if (catalog_.entries().size() >= Catalog::capacity(metadata_area().size()))
      fail("{}: the catalog is full ({} tables)", architecture_name(config_.architecture),
           catalog_.entries().size());
  }

  void checkpoint_pages() override { write_back_pages(false); }
  // Beside changes: the frames dirty before the begin, 32 pages per batch, then the rest
  // (those of earlier write-back rounds only) as above.
  void begin_checkpoint_pages_beside() override { manager_->begin_write_back_round(); }
  bool checkpoint_pages_beside() override { return manager_->write_back_beside(32); }
  void finish_checkpoint_pages_beside() override { write_back_pages(true); }

  // 1. The dirty DRAM pages written to their NVM slot or SSD, the log first; DRAM stays warm.
  // 2. Then the catalog with the roots' page ids, once the pages it names are written (a bulk
  //    load's new root among them): into the SSD metadata, which write_back_all's sync makes
  //    durable (a sync the double-write area needs meanwhile writes the catalog before), or
  //    (basic-nvm) the NVM metadata area, persisted. Its save confirms the pages claimed
  //    before it: NVM slots (NvmSlotHeader::kNewPage), or SSD pages, whose claims end in the
  //    sync that makes the catalog durable (write_back_all holds other syncs off meanwhile).
  void write_back_pages(bool earlier_rounds_only) {
    manager_->write_back_all(earlier_rounds_only, [&] {
      catalog_.save(metadata_area(), [&](Swip& root) {
        return root.is_swizzled() ? manager_->fix(root, nullptr).page_id() : root.page_id();
      });
      if (ssd_ != nullptr) return ssd_->confirm_claims();
      nvm_->device().persist(nvm_->metadata_area().data(), nvm_->metadata_area().size());
      nvm_->set_claim_generation(catalog_.sequence());
    });
  }

  // A record's entries for one page are replayed together, all or none: only onto a page
  // older than the record (its LSN says so; DoubleWriteArea::restore mended a torn write
  // first), where a leaf change's slot index is still right. A whole page, or a new one
  // (zeroed, its ranges follow), is installed wherever the page is, torn or missing.
  void redo(Lsn lsn, const RedoPageBytes& entry, std::span<const std::byte> bytes) override {
    if (entry.offset == kRedoRootEntry) return redo_root(bytes, entry.page_id);
    if (entry.offset == kRedoNewPageEntry) {
      std::vector<std::byte> zeroed(kPageSize);
      PageHeader header{};
      header.page_id = entry.page_id;
      std::memcpy(zeroed.data(), &header, sizeof(header));
      return redo(lsn, {entry.page_id, 0, kPageSize}, zeroed);
    }
    if (entry.offset != kRedoLeafEntry && entry.length == kPageSize) {
      BufferManager::Guard page = manager_->install_page(entry.page_id, bytes.data());
      std::memcpy(page.write(offsetof(PageHeader, lsn), sizeof(Lsn)), &lsn, sizeof(lsn));
      replaying_ = {entry.page_id, lsn};
      return;
    }
    if (entry.offset != kRedoLeafEntry &&
        (entry.offset < kPageHeaderSize || entry.offset + entry.length > kPageSize))
      fail("log: corrupt redo entry for page {} at LSN {}", entry.page_id, lsn);
    BufferManager::Guard page = manager_->fix_page(entry.page_id);
    if (replaying_ != std::pair{entry.page_id, lsn}) {
      Lsn page_lsn;
      std::memcpy(&page_lsn, page.read(offsetof(PageHeader, lsn), sizeof(Lsn)), sizeof(Lsn));
      if (page_lsn >= lsn) return;
      std::memcpy(page.write(offsetof(PageHeader, lsn), sizeof(Lsn)), &lsn, sizeof(lsn));
      replaying_ = {entry.page_id, lsn};
    }
    if (entry.offset == kRedoLeafEntry) return redo_leaf_change(page, entry, bytes, lsn);
    std::memcpy(page.write(entry.offset, entry.length), bytes.data(), entry.length);
  }

  // Pages the log freed last, new pages that nothing durable keeps (basic-nvm's slots, the SSD
  // pages claimed since the durable catalog that no durable record makes), and (3tier) NVM
  // copies of pages with no SSD page (a bulk load's, cut short before the SSD sync that would
  // have allocated them): their NVM slots, SSD pages and page table entries go.
  std::uint64_t settle_allocations(const LoggedAllocations& logged) override {
    std::set<PageId> pages(logged.freed.begin(), logged.freed.end());
    if (ssd_ != nullptr)
      for (const PageId page : ssd_->claimed_pages())
        if (!logged.made.contains(page)) pages.insert(page);
    if (nvm_ != nullptr) {
      auto no_ssd_page = [&](const NvmSlotHeader& header) {
        return ssd_ != nullptr && !ssd_->is_allocated(header.page_id);
      };
      for (const SlotId slot : settle_slots(*nvm_, logged, catalog_.sequence(), no_ssd_page))
        pages.insert(nvm_->header(slot).page_id);
    }
    return manager_->give_back_pages(std::vector<PageId>(pages.begin(), pages.end()));
  }
  // basic-nvm: a page's slot is its home. With an SSD, the free becomes durable at the SSD
  // sync after the one that saves the catalog: until then the page is claimed as a new one.
  void free_with_next_catalog(PageId page) override {
    if (ssd_ == nullptr)
      nvm_->free_with_catalog(static_cast<SlotId>(page));
    else
      ssd_->claim_at_next_confirm(page);
  }

 private:
  std::span<std::byte> metadata_area() { return ssd_ ? ssd_->metadata() : nvm_->metadata_area(); }

  std::unique_ptr<NvmTier> nvm_;
  std::unique_ptr<NvmTier> log_tier_;  // ssd-bm: an NVM file for the log only
  std::unique_ptr<SsdPageFile> ssd_;
  std::unique_ptr<LogManager> log_;
  std::unique_ptr<DoubleWriteArea> double_write_;
  std::unique_ptr<BufferManager> manager_;
  std::pair<PageId, Lsn> replaying_{kInvalidPageId, kNoLsn};  // the page redo is applying now
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::unique_ptr<Database> open_buffered_database(const Config& config) {
  // 1. A DRAM budget that can hold the B-tree's working set.
  const std::uint64_t minimum = kMinimumBufferFrames * FramePool::kSlabBytes;
  if (config.dram_bytes < minimum)
    fail("{}: DRAM budget of {} bytes is too small: the B-tree needs at least {} frames ({} KiB)",
         architecture_name(config.architecture), config.dram_bytes, kMinimumBufferFrames,
         minimum / 1024);
  // (Checked again against the slots by the buffer manager; here before any file changes.)
  if (config.architecture == Architecture::kThreeTier &&
      config.admission_set_size >
          AdmissionSet::kMaxEntriesPerNvmSlot * (config.nvm_bytes / kPageSize))
    fail("admission set of {} entries: at most {} per NVM page ({} pages of {} bytes of NVM)",
         config.admission_set_size, AdmissionSet::kMaxEntriesPerNvmSlot,
         config.nvm_bytes / kPageSize, config.nvm_bytes);
  // 2. The tiers of this architecture; NVM and SSD files of one database share its id. The
  //    log lives in NVM; ssd-bm has an NVM file for it alone. Opening validates and locks
  //    every file (architecture, database id, layout) before step 4 writes anything.
  const bool create = creates_files(config);
  const bool three_tier = config.architecture == Architecture::kThreeTier;
  const bool uses_nvm = three_tier || config.architecture == Architecture::kBasicNvm;
  const bool uses_ssd = three_tier || config.architecture == Architecture::kSsdBm;
  std::unique_ptr<NvmTier> nvm = uses_nvm ? open_nvm_tier(config, create) : nullptr;
  std::unique_ptr<NvmTier> log_tier = uses_nvm ? nullptr : open_log_tier(config, create);
  NvmTier& log_home = uses_nvm ? *nvm : *log_tier;
  std::unique_ptr<SsdPageFile> ssd =
      uses_ssd ? open_ssd_file(config, create, log_home.database_id(), &log_home) : nullptr;
  // One machine: when the NVM crash simulator's armed fence fires, the SSD stops too.
  CrashSimulator* nvm_crash = log_home.device().crash_simulator();
  if (SsdCrashSimulator* ssd_crash = ssd ? ssd->crash_simulator() : nullptr; ssd_crash && nvm_crash)
    ssd_crash->set_machine_down_check([nvm_crash] { return nvm_crash->crashed(); });
  // 3. The catalog of a reopened database (as of its last checkpoint), read before anything
  //    is written: a damaged one is refused with the files as they were.
  Catalog catalog;
  if (!create) catalog = Catalog::load(ssd ? ssd->metadata() : nvm->metadata_area());
  if (nvm != nullptr) nvm->set_claim_generation(catalog.sequence());
  // 4. The log area holds the log and, at its end, the double-write area. The log: new, or
  //    opened (its end found) for restart; a damaged one is refused before it writes, and its
  //    open is the first write. Then the slot header lines a crash left half mirrored.
  const LogAreaParts log_area = split_log_area(log_home.log_area(), config.architecture);
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<LogManager> log = create ? LogManager::create(log_home.device(), log_area.log)
                                           : LogManager::open(log_home.device(), log_area.log);
  const double log_open_seconds = seconds_since(start);
  log_home.mend_header_mirrors();
  // 5. A reopened database mends the pages a crash tore while they were written in place,
  //    before anything reads them; a new one retires whatever a file it replaced left there.
  auto double_write = std::make_unique<DoubleWriteArea>(log_home.device(), log_area.double_write,
                                                        [ssd = ssd.get()] { ssd->sync(); });
  const DoubleWriteRestore mended =
      double_write->restore(create ? nullptr : nvm.get(), create ? nullptr : ssd.get());
  // 6. The buffer manager; opening rebuilds its page table from the NVM slot headers. Pages
  //    go down only after the log (write-ahead rule).
  BufferManagerOptions options;
  options.dram_bytes = config.dram_bytes;
  options.nvm = nvm.get();
  options.ssd = ssd.get();
  options.cache_line_grained = three_tier && config.cache_line_grained;
  options.mini_pages = three_tier && config.mini_pages;
  options.swizzling = three_tier && config.swizzling;
  options.admission_set_size = config.admission_set_size;
  options.admit_while_nvm_has_free_slots = config.admit_while_nvm_has_free_slots;
  options.double_write = double_write.get();
  options.before_write_back = [log = log.get()](Lsn lsn) {
    log->persist_up_to(std::min(lsn, log->end_lsn()));
  };
  start = std::chrono::steady_clock::now();
  auto manager = std::make_unique<BufferManager>(options);
  const double page_table_seconds = seconds_since(start);
  auto database = std::make_unique<BufferedDatabase>(
      config, std::move(nvm), std::move(log_tier), std::move(ssd), std::move(log),
      std::move(double_write), std::move(manager), std::move(catalog));
  // 7. A new database starts with a checkpoint; a reopened one recovers.
  if (create)
    database->checkpoint();
  else
    database->recover(page_table_seconds, log_open_seconds, mended);
  return database;
}

}  // namespace tristore
