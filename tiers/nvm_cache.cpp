// BufferManager (tiers/buffer_manager.hpp): the NVM cache: admission (the admission set, or a
// free slot) and NVM eviction to SSD (paper Figure 6, transitions 4 and 6).
#include "tiers/buffer_manager.hpp"

#include <optional>
#include <vector>

#include "common/ignoring_racing_reads.hpp"
#include "common/page_format.hpp"
#include "nvm/nvm_page_checksum.hpp"

namespace tristore {

std::byte* BufferManager::admit_to_nvm(PageId page_id, const std::byte* page, bool dirty_vs_ssd) {
  // A free slot is written whole, then its header: no staging, as nothing there is in use.
  const std::optional<SlotId> slot_id = take_nvm_slot();
  if (!slot_id) return nullptr;
  std::byte* slot = nvm_->slot(*slot_id);
  nvm_device_->write(slot, page, kPageSize);
  nvm_device_->persist(slot, kPageSize);
  nvm_->write_header(*slot_id, page_id, page_lsn(page), dirty_vs_ssd, nvm_page_checksum(page));
  nvm_referenced_[*slot_id] = 1;
  ++counters_.nvm_admissions;
  return slot;
}

bool BufferManager::should_admit(PageId page_id) {
  const std::uint64_t unreserved_in_use = nvm_->slots_in_use() + nvm_reserved_slots_;
  if (options_.admit_while_nvm_has_free_slots && unreserved_in_use < nvm_->slot_count()) {
    admission_set_.take(page_id);
    ++admission_stats_.admitted_to_free_slot;
    return true;
  }
  if (admission_set_.take(page_id)) {
    ++admission_stats_.admitted_from_set;
    return true;
  }
  return false;
}

std::optional<SlotId> BufferManager::take_nvm_slot() {
  // The slots of an eviction round are reserved for the next admissions: were they free to
  // all, the free-slot rule (meant for warm-up) would admit every page after each round.
  if (nvm_->slots_in_use() + nvm_reserved_slots_ >= nvm_->slot_count()) {
    if (nvm_reserved_slots_ == 0) nvm_reserved_slots_ = evict_nvm_pages(nvm_eviction_batch_);
    if (nvm_reserved_slots_ == 0) return std::nullopt;
    --nvm_reserved_slots_;
  }
  return nvm_->allocate_slot();
}

std::size_t BufferManager::evict_nvm_pages(std::size_t count) {
  // Transition 6, for up to `count` pages at once.
  if (nvm_ == nullptr || ssd_ == nullptr || count == 0) return 0;
  // 1. Victims: clock over slots with second chance, skipping free slots, pages in DRAM now
  //    (their slot backs them) and the slot being loaded. Back at the first victim, every
  //    slot has been seen since: stop before picking one twice.
  const auto slots = static_cast<SlotId>(nvm_->slot_count());
  std::vector<SlotId>& victims = nvm_victims_;
  victims.clear();
  for (std::size_t step = 0; step < 2 * std::size_t{slots} + 1 && victims.size() < count; ++step) {
    const SlotId slot_id = nvm_hand_;
    if (!victims.empty() && slot_id == victims.front()) break;
    nvm_hand_ = slot_id + 1 == slots ? 0 : slot_id + 1;
    {
      // A checkpoint beside changes may be writing the header of a slot whose page is in DRAM
      // meanwhile (write_back_beside): its page id and its being in use stay as they are.
      [[maybe_unused]] const IgnoringRacingReads racing;
      const NvmSlotHeader& header = nvm_->header(slot_id);
      if (header.is_free() || slot_id == loading_slot_) continue;
      void* const* entry = page_table_.find(header.page_id);
      if (entry == nullptr || *entry != nvm_->slot(slot_id)) continue;
    }
    if (nvm_referenced_[slot_id] != 0) {
      nvm_referenced_[slot_id] = 0;
      continue;
    }
    victims.push_back(slot_id);
  }
  // 2. The pages SSD lacks go there (side by side, behind this thread), made durable by one
  //    sync before any slot is freed: an NVM copy may hold changes older than the last
  //    checkpoint, which the log no longer has.
  bool wrote = false;
  for (const SlotId slot_id : victims) {
    const NvmSlotHeader& header = nvm_->header(slot_id);
    if (!header.dirty_vs_ssd()) continue;
    // Checked first: SSD would give a corrupt page a checksum of its own.
    if (!nvm_->content_checked(slot_id)) nvm_->check_content(slot_id);
    nvm_device_->charge_read(nvm_->slot(slot_id), kPageSize);
    ssd_->write_behind(header.page_id, nvm_->slot(slot_id));
    wrote = true;
  }
  if (wrote) sync_ssd();
  // 3. Only now the slots go (their headers persisted free, one fence for all).
  for (const SlotId slot_id : victims) page_table_.erase(nvm_->header(slot_id).page_id);
  nvm_->free_slots(victims);
  counters_.nvm_evictions += victims.size();
  return victims.size();
}

}  // namespace tristore
