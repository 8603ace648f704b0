#pragma once
// The NVM tier: fixed 16 KiB page slots in a mapped NVM file, their persisted headers, the
// log area and the engine's metadata area. Slot allocation and a DRAM mirror of the headers
// are volatile; open() rebuilds both by scanning the persisted headers. Slots are allocated
// and freed under a latch of their own: nvm-direct's leaf splits beside each other allocate
// side by side (tiers/nvm_direct_writes.hpp).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/spin_latch.hpp"
#include "common/types.hpp"
#include "emulation/nvm_device.hpp"
#include "nvm/nvm_layout.hpp"
#include "nvm/nvm_slot_header.hpp"

namespace tristore {

struct NvmTierOptions {
  NvmDeviceOptions device;
  std::uint64_t log_bytes = 16ull << 20;  // rounded up to 4 KiB
  std::uint64_t database_id = 0;          // create: 0 = pick a random id; open: 0 = accept any
  std::string architecture;  // create: recorded in the superblock; open: must match (empty: any)
  // Tests: called before read_page copies a slot, on the reading thread; it may wait (a read
  // held in flight) or throw (a failed read).
  std::function<void(SlotId)> before_page_read = {};
};

class NvmTier {
 public:
  // Formats a new file; a size too small for superblock + log + one slot -> Error.
  static std::unique_ptr<NvmTier> create(const NvmTierOptions& options);
  // Validates magic, version, page size, checksum, architecture, database id and file size ->
  // Error. Writes nothing (mend_header_mirrors writes what a crash left to mend).
  static std::unique_ptr<NvmTier> open(const NvmTierOptions& options);
  // Gives each slot header line that a crash left with one intact version its mirror back:
  // the line's next update would otherwise overwrite that version first. A database calls
  // this once every one of its files is validated, so that a refused open writes nothing;
  // the first header update does it otherwise (a tier opened alone, by a tool or a test).
  void mend_header_mirrors();

  NvmTier(const NvmTier&) = delete;
  NvmTier& operator=(const NvmTier&) = delete;

  std::uint64_t database_id() const { return database_id_; }
  std::uint64_t slot_count() const { return layout_.slot_count; }
  std::uint64_t slots_in_use() const {
    const std::lock_guard lock(free_slots_latch_);
    return layout_.slot_count - free_slots_.size();
  }
  const NvmLayout& layout() const { return layout_; }

  std::byte* slot(SlotId id) const { return slots_ + std::uint64_t{id} * kPageSize; }
  bool in_slot_area(const void* p) const {
    auto* b = static_cast<const std::byte*>(p);
    return b >= slots_ && b < slots_end_;
  }
  SlotId slot_of(const void* p) const {
    return static_cast<SlotId>((static_cast<const std::byte*>(p) - slots_) / kPageSize);
  }

  // The slot's current header, from the DRAM mirror: no NVM access, no checksum.
  const NvmSlotHeader& header(SlotId id) const { return mirror_[id]; }
  // Whether the persisted line's current version is intact and says what header(id) says
  // (tests, tools: it reads NVM and recomputes checksums).
  bool header_valid(SlotId id) const;
  // Writes the slot's next header version and persists it (flush + fence): atomic. Then
  // mirrors it into the other version (flushed, fenced by the next fence of anyone).
  // page_checksum: nvm_page_checksum of the slot's content as it now lies in NVM, if known.
  void write_header(SlotId id, PageId page_id, Lsn lsn, bool dirty_vs_ssd,
                    std::optional<std::uint32_t> page_checksum = std::nullopt);
  // A slot claimed for a new page keeps the claim (NvmSlotHeader::kNewPage) through header
  // writes for the same page. claim_for_new_page writes the header of a slot just allocated
  // for one, with the claim generation: the sequence number of the newest saved catalog, which
  // the engine sets at open and after each save.
  void claim_for_new_page(SlotId id, PageId page_id);
  // Marks the slot's page to go with the next catalog saved (NvmSlotHeader::kFreedWithCatalog);
  // keep_page drops the mark (restart, where that catalog never became durable).
  void free_with_catalog(SlotId id);
  void keep_page(SlotId id);
  void set_claim_generation(std::uint64_t catalog_sequence) {
    claim_generation_.store(catalog_sequence, kRelaxed);
  }

  // Page content checks (docs/durability.md, "What each file region is protected by"). A
  // slot's content is checked once per open, when first read: against the header's page
  // checksum if it has one. Slots freed, allocated or written in this run, and pages the log
  // names from the checkpoint on (restart rewrites them), need no check.
  // (Relaxed atomics: nvm-direct sessions fix and change pages from many threads.)
  bool content_checked(SlotId id) const { return flag(content_checked_, id).load(kRelaxed) != 0; }
  void mark_content_checked(SlotId id) { flag(content_checked_, id).store(1, kRelaxed); }
  // nvm-direct changes pages in place after their checksum: seal_pages renews it.
  void note_changed_in_place(SlotId id) { flag(changed_in_place_, id).store(1, kRelaxed); }
  // Restart: the log names the page from the checkpoint on (see DurableStore::trust_page).
  void trust_content(SlotId id) {
    mark_content_checked(id);
    note_changed_in_place(id);
  }
  // The whole page in slot `id` into DRAM (page-grained tiers), charged as NVM reads.
  void read_page(SlotId id, std::byte* dram) {
    if (before_page_read_) [[unlikely]]
      before_page_read_(id);
    device_->read(dram, slot(id), kPageSize);
  }
  // Reads the whole slot (charged as NVM reads) and compares; Error naming the file, the slot
  // and the page on a mismatch.
  void check_content(SlotId id);
  // The same for a copy of the slot's page that read_page made, without reading NVM again.
  // The slot's header must not change meanwhile (its page is being loaded, so nobody writes
  // it back).
  void check_copy(SlotId id, const std::byte* page);
  // Gives every occupied slot without a page checksum, or changed in place since, a new one
  // from its content in NVM (charged as NVM reads); one fence for all. Call when no DRAM copy
  // holds newer data for them and no page is being changed.
  void seal_pages();

  std::optional<SlotId> allocate_slot() {
    const std::lock_guard lock(free_slots_latch_);
    if (free_slots_.empty()) return std::nullopt;
    const SlotId id = free_slots_.back();
    free_slots_.pop_back();
    return id;
  }
  // Persists the slot as free and returns it to the free list.
  void free_slot(SlotId id) { free_slots({&id, 1}); }
  // The same for many slots, with one fence.
  void free_slots(std::span<const SlotId> ids);

  std::span<std::byte> log_area() const { return {base() + layout_.log_offset, layout_.log_bytes}; }
  // 2 KiB for the engine; persist it via device().persist.
  std::span<std::byte> metadata_area() const {
    return {base() + kNvmMetadataOffset, kNvmMetadataBytes};
  }

  NvmDevice& device() { return *device_; }
  const NvmDevice& device() const { return *device_; }

 private:
  NvmTier(std::unique_ptr<NvmDevice> device, const NvmLayout& layout, std::uint64_t database_id,
          std::function<void(SlotId)> before_page_read);
  std::byte* base() const { return device_->base(); }
  static constexpr auto kRelaxed = std::memory_order_relaxed;
  static std::atomic_ref<std::uint8_t> flag(const std::vector<std::uint8_t>& flags, SlotId id) {
    return std::atomic_ref<std::uint8_t>(const_cast<std::uint8_t&>(flags[id]));
  }
  void load_headers();
  // Persists the slot's next header and mirrors it (write_header); the slot's content counts
  // as checked and unchanged since. persist_header leaves what it knew of the content.
  void write_content(SlotId id, const NvmSlotHeader& content);
  void persist_header(SlotId id, const NvmSlotHeader& content);
  // Writes and flushes the slot's next header version, not fenced; returns it for the mirror.
  NvmSlotHeader stage_header(SlotId id, const NvmSlotHeader& content);
  // The other place gets the version just fenced (flushed, not fenced).
  void stage_mirror(SlotId id);

  std::unique_ptr<NvmDevice> device_;
  NvmLayout layout_;
  std::uint64_t database_id_;
  NvmSlotHeaderLine* header_lines_;
  std::vector<NvmSlotHeader> mirror_;  // the current version of every slot's header
  std::vector<SlotId> unmirrored_;     // lines with one intact version, until mended
  std::vector<std::uint8_t> content_checked_;
  std::vector<std::uint8_t> changed_in_place_;  // since its checksum was written
  std::byte* slots_;
  std::byte* slots_end_;
  mutable SpinLatch free_slots_latch_;
  std::vector<SlotId> free_slots_;  // a stack; lowest ids on top after a rebuild
  std::atomic<std::uint64_t> claim_generation_{0};
  std::function<void(SlotId)> before_page_read_;
};

}  // namespace tristore
