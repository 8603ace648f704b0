#pragma once
// nvm-direct's changes of single leaf entries side by side, as tiers/resident_writes.hpp is the
// buffer manager's and tiers/main_memory_writes.hpp main-memory's: while the database latch is
// held for changes (engine/operation_latch.hpp) no exclusive holder and no reader outside a
// transaction runs, so only leaf entries change, in place in NVM. Inner nodes are read without
// a latch; leaves are latched in the DRAM word NvmDirectAccess keeps for each slot (shared for
// a scan's copy, exclusive to change; a lookup reads its leaf optimistically against the
// word's version, read_leaf). A guard lets its leaf go after its written lines are flushed and
// fenced, and the operation's log holds it until its record is durable
// (engine/logged_access.hpp), so no other change reads the page in between. A thread holds at
// most one leaf latch at a time, so the latches cannot deadlock.
//
// A page not checked against its checksum since open is checked at its first fix, under its
// latch word held exclusive (tried: taken by another, the page is the exclusive latch's), so
// that the check, which reads the page whole, never races a change of it. A damaged page, a
// split or a merge throws RetryExclusively before anything is changed, and the caller runs the
// operation again under the exclusive latch. allocate_page, move_swips, swip_of and free_page must
// never be reached (the B-tree refuses first) and throw std::logic_error.
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <utility>

#include "common/error.hpp"
#include "common/shared_spin_latch_hold.hpp"
#include "common/types.hpp"
#include "tiers/nvm_direct_access.hpp"
#include "tiers/optimistic_leaf_read.hpp"
#include "tiers/pages_stay_put.hpp"
#include "tiers/swip.hpp"

namespace tristore {

class NvmDirectWrites : public PagesStayPut<NvmDirectWrites> {
 public:
  static constexpr const char* kName = "NvmDirectWrites";
  // Not an Error: the operation runs again under the exclusive latch, never reported.
  struct RetryExclusively {};

  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept = default;
    // Lets its own page go as release() does: lines first, then the leaf.
    Guard& operator=(Guard&& other) noexcept(false) {
      if (this != &other) {
        release();
        inner_ = std::move(other.inner_);
        latch_ = std::move(other.latch_);
      }
      return *this;
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

    PageId page_id() const { return inner_.page_id(); }
    const std::byte* read(std::uint32_t offset, std::uint32_t length) {
      return inner_.read(offset, length);
    }
    // Only the leaf latched for its change.
    std::byte* write(std::uint32_t offset, std::uint32_t length) {
      assert(latch_.exclusive());
      return inner_.write(offset, length);
    }
    std::byte* whole_page() { return inner_.whole_page(); }
    void mark_dirty(std::uint32_t offset, std::uint32_t length) {
      assert(latch_.exclusive());
      inner_.mark_dirty(offset, length);
    }
    // 1. The lines written reach the persistence domain (NvmDirectAccess::Guard's release).
    // 2. The leaf is let go, also when the fence threw.
    void release() {
      try {
        inner_ = NvmDirectAccess::Guard();
      } catch (...) {
        latch_.release();
        throw;
      }
      latch_.release();
    }

   private:
    friend class NvmDirectWrites;
    explicit Guard(NvmDirectAccess::Guard&& inner) : inner_(std::move(inner)) {}

    // Destroyed in reverse: inner_ first (its lines written back; it may throw SimulatedCrash
    // from the fence, except while unwinding), then the leaf let go, also when inner_ threw.
    SharedSpinLatchHold latch_;  // the leaf's, once latch_leaf took it
    NvmDirectAccess::Guard inner_;
  };

  explicit NvmDirectWrites(NvmDirectAccess& direct) : direct_(direct) {}
  ~NvmDirectWrites() { direct_.add_leaf_reads_retried(leaf_reads_retried_); }
  NvmDirectWrites(const NvmDirectWrites&) = delete;
  NvmDirectWrites& operator=(const NvmDirectWrites&) = delete;

  Guard fix(Swip& swip, Guard*) {
    if (direct_.first_fix_since_open(swip)) [[unlikely]]
      check_beside(swip);
    return Guard(direct_.fix(swip, nullptr));
  }

  // A leaf the B-tree is about to read, or to change.
  void latch_leaf(Guard& leaf, bool for_change) {
    leaf.latch_.lock(direct_.latch_word(leaf.page_id()), for_change);
  }
  // Runs read() on a leaf that no latch_leaf latched, without a latch: again while a change
  // ran beside it, after a few tries under the shared latch (tiers/optimistic_leaf_read.hpp).
  template <typename Read>
  auto read_leaf(Guard& leaf, Read&& read) {
    return optimistic_leaf_read(direct_.latch_word(leaf.page_id()), leaf_reads_retried_, read,
                                [&] { latch_leaf(leaf, false); });
  }
  // A split, a merge or a new root: the exclusive latch's.
  [[noreturn]] void refuse_structure_change() {
    structure_refused_ = true;
    throw RetryExclusively{};
  }
  bool structure_refused() const { return structure_refused_; }

 private:
  // The first fix of a page since open checks its content beside the changes, under the page's
  // latch word held exclusive, so that no change of the page runs meanwhile (a leaf changes
  // only so latched; inner pages do not change beside changes). The latch is tried, not waited
  // for: this thread may hold a leaf's. Not taken, or the page damaged: the exclusive latch's,
  // whose fix gives the Error.
  void check_beside(Swip& swip) {
    SharedSpinLatchHold check;
    if (!check.try_lock(direct_.latch_word(swip.page_id()))) throw RetryExclusively{};
    try {
      const NvmDirectAccess::Guard checked = direct_.fix(swip, nullptr);
    } catch (const Error&) {
      throw RetryExclusively{};
    }
  }

  NvmDirectAccess& direct_;
  std::uint64_t leaf_reads_retried_ = 0;
  bool structure_refused_ = false;
};

}  // namespace tristore
