#pragma once
// Page access for the nvm-direct architecture (Arulraj et al.): every page lives in an NVM
// slot (page id = slot id), read and written in place, no DRAM copy. Reads are charged to the
// emulated NVM (latency for lines that miss the simulated LLC), exactly as the buffer-managed
// architectures pay when they load a line. Writes are recorded per cache line; the guard's
// release writes those lines back to the persistence domain: charge_write + flush per run of
// dirty lines, then one fence.
//
// Pages are checked once per open, at their first fix, against the checksum in their slot
// header (NvmTier::check_content); a page changed in place is noted, and checkpoints renew its
// checksum (NvmTier::seal_pages). A swip naming no page in use is an Error, never a wild read.
// Beside the slots, a latch word per slot in DRAM for changes of leaf entries side by side
// (tiers/nvm_direct_writes.hpp), and per-thread counts of those changes.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <utility>

#include "common/changes_beside_counts.hpp"
#include "common/error.hpp"
#include "common/page_format.hpp"
#include "common/types.hpp"
#include "nvm/nvm_tier.hpp"
#include "tiers/latch_words.hpp"
#include "tiers/swip.hpp"

namespace tristore {

class NvmDirectAccess {
 public:
  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept
        : device_(std::exchange(other.device_, nullptr)),
          tier_(other.tier_),
          page_(other.page_),
          slot_(other.slot_),
          dirty_(std::exchange(other.dirty_, {})) {}
    Guard& operator=(Guard&& other) noexcept(false) {
      if (this != &other) {
        release();
        device_ = std::exchange(other.device_, nullptr);
        tier_ = other.tier_;
        page_ = other.page_;
        slot_ = other.slot_;
        dirty_ = std::exchange(other.dirty_, {});
      }
      return *this;
    }
    // May throw SimulatedCrash from the fence (crash tests), except while unwinding.
    ~Guard() noexcept(false) {
      if (device_ == nullptr) return;  // moved from or released: the common case, no call
      if (dirty_ == decltype(dirty_){}) {
        device_ = nullptr;
        return;
      }
      if (std::uncaught_exceptions() == 0) {
        release();
        return;
      }
      try {
        release();
      } catch (...) {
      }
    }

    PageId page_id() const { return slot_; }
    const std::byte* read(std::uint32_t offset, std::uint32_t length) {
      device_->charge_read(page_ + offset, length);
      return page_ + offset;
    }
    std::byte* write(std::uint32_t offset, std::uint32_t length) {
      device_->charge_read(page_ + offset, length);
      mark_dirty(offset, length);
      return page_ + offset;
    }
    std::byte* whole_page() {
      device_->charge_read(page_, kPageSize);
      return page_;
    }
    void mark_dirty(std::uint32_t offset, std::uint32_t length) {
      if (length == 0) return;
      for (std::size_t line = line_of(offset); line <= line_of(offset + length - 1); ++line)
        dirty_[line / 64] |= std::uint64_t{1} << (line % 64);
    }

   private:
    friend class NvmDirectAccess;
    Guard(NvmDevice* device, NvmTier* tier, std::byte* page, SlotId slot)
        : device_(device), tier_(tier), page_(page), slot_(slot) {}

    // Writes back each run of dirty lines, then one fence.
    void release() {
      if (device_ == nullptr) return;
      NvmDevice* device = std::exchange(device_, nullptr);
      bool any = false;
      std::size_t line = 0;
      while (line < kLinesPerPage) {
        if (!is_dirty(line)) {
          ++line;
          continue;
        }
        std::size_t end = line + 1;
        while (end < kLinesPerPage && is_dirty(end)) ++end;
        std::byte* bytes = page_ + line * kCacheLineSize;
        std::size_t length = (end - line) * kCacheLineSize;
        device->charge_write(bytes, length);
        device->flush(bytes, length);
        any = true;
        line = end;
      }
      dirty_ = {};
      if (any) {
        tier_->note_changed_in_place(slot_);
        device->fence();
      }
    }
    bool is_dirty(std::size_t line) const { return (dirty_[line / 64] >> (line % 64) & 1) != 0; }

    NvmDevice* device_ = nullptr;
    NvmTier* tier_ = nullptr;
    std::byte* page_ = nullptr;
    SlotId slot_ = 0;
    std::array<std::uint64_t, kLinesPerPage / 64> dirty_{};
  };

  // Maps (does not touch) a latch word per slot.
  explicit NvmDirectAccess(NvmTier& tier)
      : tier_(tier), device_(tier.device()), latches_(tier.slot_count(), "nvm-direct") {}
  NvmDirectAccess(const NvmDirectAccess&) = delete;
  NvmDirectAccess& operator=(const NvmDirectAccess&) = delete;

  Guard allocate_page() {
    // 1. A free slot, else the NVM is full.
    auto slot = tier_.allocate_slot();
    if (!slot) fail("nvm-direct: NVM is full ({} slots of 16 KiB)", tier_.slot_count());
    // 2. Claim it in its persisted header, so a reopen finds it in use (or, should no durable
    //    record name the page, gives it back: DurableStore::settle_allocations).
    tier_.claim_for_new_page(*slot, *slot);
    // 3. A zeroed page with its header; the guard's release persists it.
    Guard guard(&device_, &tier_, tier_.slot(*slot), *slot);
    std::memset(guard.page_, 0, kPageSize);
    reinterpret_cast<PageHeader*>(guard.page_)->page_id = *slot;
    guard.mark_dirty(0, kPageSize);
    return guard;
  }

  Guard fix(Swip& swip, Guard*) {
    if (!checked_in_use(swip)) [[unlikely]]
      check_page(swip);
    return page_of(swip);
  }
  // Whether the swip names a page in use whose content was checked since open: fix then
  // checks nothing more.
  bool checked_in_use(Swip swip) const {
    return names_page_in_use(swip) && tier_.content_checked(static_cast<SlotId>(swip.page_id()));
  }
  bool names_page_in_use(Swip swip) const {
    const PageId page_id = page_id_of(swip);
    return !swip.is_swizzled() && page_id < tier_.slot_count() &&
           tier_.header(static_cast<SlotId>(page_id)).page_id == page_id;
  }
  // The first fix of a page since open checks its content; a swip that names no page in use
  // is an Error, never a wild read.
  void check_page(Swip swip) {
    const PageId page_id = page_id_of(swip);
    if (swip.is_swizzled() || page_id >= tier_.slot_count())
      fail("nvm-direct: corrupt page reference {:#x} (the NVM file has {} slots)", swip.raw(),
           tier_.slot_count());
    const auto slot = static_cast<SlotId>(page_id);
    if (tier_.header(slot).page_id != page_id)
      fail("nvm-direct: corrupt page reference: page {} is not in use (its slot header says {})",
           page_id, tier_.header(slot).is_free() ? "free" : "another page");
    tier_.check_content(slot);
  }
  // The page of a swip that checked_in_use or check_page accepted.
  Guard page_of(Swip swip) {
    const auto slot = static_cast<SlotId>(swip.page_id());
    return Guard(&device_, &tier_, tier_.slot(slot), slot);
  }

  // A swip at a time, each read and stored whole: a descent beside a leaf split reads a swip
  // of the parent once (tiers/nvm_direct_writes.hpp).
  void move_swips(Guard& to, std::uint32_t offset, Guard*, Swip* swips, std::uint32_t count) {
    Swip::move_within_page(reinterpret_cast<Swip*>(to.page_ + offset), swips, count,
                           [](std::uint32_t, Swip) {});
    to.mark_dirty(offset, count * static_cast<std::uint32_t>(sizeof(Swip)));
  }

  Swip swip_of(const Guard& guard) { return Swip::from_page_id(guard.slot_); }

  void free_page(Guard&& guard) {
    Guard dying = std::move(guard);
    dying.dirty_ = {};
    tier_.free_slot(dying.slot_);
    dying.device_ = nullptr;
  }

  NvmTier& tier() { return tier_; }

  // For changes side by side (tiers/nvm_direct_writes.hpp): the latch word of a page, zero when
  // unlatched, a cache line apart from its neighbours'.
  std::uint64_t& latch_word(PageId page_id) { return latches_[page_id]; }
  // An operation in a transaction served beside others, or run again exclusively because it
  // needed more (as BufferManager::add_change_beside); counted per thread.
  void add_change_beside(bool retried) { changes_beside_.add(retried); }
  void add_structure_retried() { changes_beside_.add_structure_retried(); }
  // A leaf split beside changes, counted per thread.
  void add_split_beside() { changes_beside_.add_split_beside(); }
  void add_undo_step_beside(bool retried) { changes_beside_.add_undo_step(retried); }
  // Optimistic leaf reads beside changes that a change spoilt, counted per thread.
  void add_leaf_reads_retried(std::uint64_t reads) {
    changes_beside_.add_leaf_reads_retried(reads);
  }
  Counters counters() const { return changes_beside_.counters(); }

 private:
  // The page a swip names (a page id, unswizzled, is the page's slot), as raw bits: fix checks
  // that it is one.
  static PageId page_id_of(const Swip& swip) { return swip.raw() & ~Swip::from_page_id(0).raw(); }

  NvmTier& tier_;
  NvmDevice& device_;
  LatchWords latches_;  // one per slot
  ChangesBesideCounts changes_beside_;
};

}  // namespace tristore
