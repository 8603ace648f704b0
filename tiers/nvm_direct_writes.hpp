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
// A leaf whose parent has room splits beside the changes (BTree::insert_splitting_leaf_beside),
// as on main-memory (tiers/main_memory_writes.hpp): under the tree's structure version
// (common/structure_version.hpp), which every descent here checks, the parent latched
// exclusive in its word (latch_parent), the new leaf allocated latched (allocate_page: slots
// are allocated under the tier's latch), and swips moved a word at a time, so that a descent
// reading a swip once (fix) never reads one half written. Its pages' before-images are logged
// and persisted before each write, as for a change of an entry, and its three pages stay
// latched until its record is durable (engine/logged_access.hpp): restart puts back a split
// the crash interrupted, and no other change wrote those pages after it.
//
// A page not checked against its checksum since open is checked at its first fix, under its
// latch word held exclusive (tried: taken by another, the page is the exclusive latch's), so
// that the check, which reads the page whole, never races a change of it. A swip that names
// no page in use (a descent beside a split may read one; the structure version would send it
// back), a damaged page, a merge, a new root or a split under a full parent throws
// RetryExclusively before anything is changed, and the caller runs the operation again under
// the exclusive latch, which reports an Error where there is one. free_page must never be
// reached (merges refuse first) and throws std::logic_error.
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

  // The swip read once, whole: a split beside may be moving it (move_swips).
  Guard fix(Swip& swip, Guard*) {
    const Swip seen = Swip::load(swip);
    if (!direct_.checked_in_use(seen)) [[unlikely]]
      check_beside(seen);
    return Guard(direct_.page_of(seen));
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
  // A leaf split beside the changes, under the tree's structure version (BTree): its parent
  // latched exclusive (no descent beside latches an inner node; a first fix's check may hold
  // it a moment), the new leaf allocated latched, swips moved and linked a word at a time.
  void latch_parent(Guard& parent) {
    parent.latch_.lock(direct_.latch_word(parent.page_id()), true);
  }
  Guard allocate_page() {
    Guard page(direct_.allocate_page());
    page.latch_.lock(direct_.latch_word(page.page_id()), true);
    return page;
  }
  void move_swips(Guard& to, std::uint32_t offset, Guard*, Swip* swips, std::uint32_t count) {
    assert(to.latch_.exclusive());
    direct_.move_swips(to.inner_, offset, nullptr, swips, count);
  }
  Swip swip_of(const Guard& guard) { return Swip::from_page_id(guard.page_id()); }
  void add_split_beside() { direct_.add_split_beside(); }

  // Any other split, a merge or a new root: the exclusive latch's.
  [[noreturn]] void refuse_structure_change() {
    structure_refused_ = true;
    throw RetryExclusively{};
  }
  bool structure_refused() const { return structure_refused_; }

 private:
  // A swip that names no page in use: the exclusive latch's (a descent beside a split may
  // have read it from a parent being changed; the exclusive run reports a damaged one). The
  // first fix of a page since open checks its content beside the changes, under the page's
  // latch word held exclusive, so that no change of the page runs meanwhile (a leaf changes
  // only so latched, an inner page only in a split that latches it). The latch is tried, not
  // waited for: this thread may hold a leaf's. Not taken, or the page damaged: the exclusive
  // latch's, whose fix gives the Error.
  void check_beside(Swip seen) {
    if (!direct_.names_page_in_use(seen)) throw RetryExclusively{};
    SharedSpinLatchHold check;
    if (!check.try_lock(direct_.latch_word(seen.page_id()))) throw RetryExclusively{};
    try {
      direct_.check_page(seen);
    } catch (const Error&) {
      throw RetryExclusively{};
    }
  }

  NvmDirectAccess& direct_;
  std::uint64_t leaf_reads_retried_ = 0;
  bool structure_refused_ = false;
};

}  // namespace tristore
