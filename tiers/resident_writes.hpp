#pragma once
// Changes of single leaf entries side by side, while the database latch is held for changes
// (engine/operation_latch.hpp): no reader outside a transaction and no exclusive holder runs,
// so no frame is reused while a change may be reading it, and inner nodes change only in leaf
// splits (below) and as swips are swizzled and unswizzled; leaf entries change, lines are
// appended, pages are loaded into free frames or move to new ones, and misses evict ahead
// (a victim latched first: a frame a change holds is passed over, and one that a change
// latches or reads after its eviction is found let go). So inner nodes are read without a
// latch, and leaves are latched in their frame (latch_leaf: FrameHeader::latch_shared, or
// latch_exclusive for a change and for a read of a leaf not whole in DRAM, whose misses, a
// scan's whole leaf too, are then served beside the changes). A thread waits for at most one
// leaf's frame latch at a time (an append only tries another frame's; a split waits for its
// parent's, below), and the buffer manager's miss latch is never held while waiting for a
// frame latch, so the latches cannot deadlock. A lookup reads its leaf optimistically instead
// (read_leaf): it writes nothing shared, and reads again if a change ran beside it.
//
// A leaf is changed where it is, a full frame or a mini page, once every run of bytes the
// change writes is resident (claim_writes, asked before the first write: in a mini page, each
// run in consecutive slots), so a change never needs a line halfway through. Missing lines
// that simply append to their frame (BufferManager::append_beside_changes: no resident line
// moves) are loaded beside the changes, under the frame's exclusive latch.
//
// A page not in DRAM is loaded into a free frame, and a swip swizzled, under the buffer
// manager's miss latch beside the changes (BufferManager::fix_beside_changes); swips are
// stored atomically, so a changer reads each swip once (Swip::load). Lines that do not simply
// append (a mini page to sort into a copy, or to promote) are loaded there too, under the
// frame's exclusive latch (BufferManager::load_beside_changes): the page moves to a new
// frame, latched before anything leads to it, and the guard follows it, latch and all. The
// old frame is let go but not reused while changes may be inside (tiers/retired_frames.hpp):
// a changer that latches it, or reads it optimistically, finds it let go and runs again.
//
// Anything more (no free frame, a frame another thread has latched, a leaf to split or merge)
// throws RetryExclusively before anything is changed, and the caller runs the operation again
// under the exclusive latch; where only loading was missing (needs_loading), it may first load
// the path and the runs the change claimed (to_load) as a reader and try beside once more.
// Fixes are counted per thread (BufferManager::add_resident_reads).
//
// It models PageAccess for lookups and single-entry changes; allocate_page, move_swips,
// swip_of and free_page must never be reached (the B-tree refuses first: refuse_structure_change)
// and throw std::logic_error.
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "common/byte_range.hpp"
#include "common/ignoring_racing_reads.hpp"
#include "common/types.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/frame.hpp"
#include "tiers/optimistic_leaf_read.hpp"
#include "tiers/pages_stay_put.hpp"
#include "tiers/swip.hpp"

namespace tristore {

class ResidentWrites : public PagesStayPut<ResidentWrites> {
 public:
  static constexpr const char* kName = "ResidentWrites";
  // Not an Error: the operation runs again under the exclusive latch, never reported.
  using RetryExclusively = BufferManager::RetryExclusively;

  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept
        : access_(other.access_),
          frame_(std::exchange(other.frame_, nullptr)),
          whole_(std::exchange(other.whole_, nullptr)),
          latched_(std::exchange(other.latched_, Latched::kNo)) {}
    Guard& operator=(Guard&& other) noexcept {
      if (this != &other) {
        release();
        access_ = other.access_;
        frame_ = std::exchange(other.frame_, nullptr);
        whole_ = std::exchange(other.whole_, nullptr);
        latched_ = std::exchange(other.latched_, Latched::kNo);
      }
      return *this;
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { release(); }

    PageId page_id() const { return frame_->page_id; }
    const std::byte* read(std::uint32_t offset, std::uint32_t length) const {
      if (whole_ != nullptr) [[likely]]
        return whole_ + offset;
      if (const std::byte* bytes = resident_bytes(frame_, offset, length)) return bytes;
      // Missing lines that simply append to the frame are loaded here, others under the miss
      // latch (the page may move to another frame, which the guard follows).
      if (const std::byte* bytes = append(offset, length)) return bytes;
      if (const std::byte* bytes = load(offset, length)) return bytes;
      access_->to_load_.anything = true;
      throw RetryExclusively{};
    }
    // Before a leaf change's first write: every run it writes must be resident, each in one
    // piece, or nothing is written (the runs missing are noted in to_load).
    void claim_writes(std::span<const ByteRange> runs) {
      assert(latched_ == Latched::kExclusive);
      if (whole_ != nullptr) [[likely]]
        return;
      bool missing = false;
      for (const ByteRange& run : runs) {
        if (resident_bytes(frame_, run.offset, run.length) != nullptr ||
            append(run.offset, run.length) != nullptr || load(run.offset, run.length) != nullptr)
          continue;
        access_->note_to_load(run);
        missing = true;
      }
      if (missing) throw RetryExclusively{};
    }
    // Only the leaf latched for its change, in runs it claimed (or a full frame with every
    // line resident).
    std::byte* write(std::uint32_t offset, std::uint32_t length) {
      assert(latched_ == Latched::kExclusive);
      std::byte* bytes = whole_ != nullptr
                             ? whole_ + offset
                             : const_cast<std::byte*>(resident_bytes(frame_, offset, length));
      assert(bytes != nullptr && "a write of a run not claimed");
      access_->manager_.mark_written(frame_, offset, length);
      return bytes;
    }
    // A scan's leaf: one not whole in DRAM is latched exclusively (latch_leaf), and made
    // whole here beside the changes, a mini page promoted (the guard follows it).
    std::byte* whole_page() const {
      if (whole_ != nullptr) [[likely]]
        return whole_;
      if (const std::byte* bytes = load(0, kPageSize)) return const_cast<std::byte*>(bytes);
      access_->to_load_.anything = true;
      throw RetryExclusively{};
    }
    void mark_dirty(std::uint32_t offset, std::uint32_t length) {
      assert(latched_ == Latched::kExclusive);
      access_->manager_.mark_written(frame_, offset, length);
    }
    void release() {
      if (frame_ == nullptr) return;
      FrameHeader* frame = std::exchange(frame_, nullptr);
      whole_ = nullptr;
      const Latched latched = std::exchange(latched_, Latched::kNo);
      if (latched == Latched::kExclusive)
        frame->unlatch_exclusive();
      else if (latched == Latched::kShared)
        frame->unlatch_shared();
    }

   private:
    friend class ResidentWrites;
    Guard(ResidentWrites* access, FrameHeader* frame)
        : access_(access), frame_(frame), whole_(data_if_whole(frame)) {}
    const std::byte* append(std::uint32_t offset, std::uint32_t length) const {
      return access_->manager_.append_beside_changes(frame_, offset, length,
                                                     latched_ == Latched::kExclusive);
    }
    // Not under the shared latch: it cannot become the exclusive latch the load needs.
    const std::byte* load(std::uint32_t offset, std::uint32_t length) const {
      if (latched_ == Latched::kShared) return nullptr;
      const BufferManager::Served served = access_->manager_.load_beside_changes(
          frame_, offset, length, latched_ == Latched::kExclusive);
      if (served.bytes == nullptr) return nullptr;
      if (served.frame != frame_) {
        frame_ = served.frame;
        whole_ = data_if_whole(frame_);
      }
      return served.bytes;
    }

    ResidentWrites* access_ = nullptr;  // whose flag and runs a miss notes
    // latched when latched_ says so; a load may move the page (and the latch) to a new frame.
    mutable FrameHeader* frame_ = nullptr;
    // frame_'s data when it is a full frame, all lines resident.
    mutable std::byte* whole_ = nullptr;
    enum class Latched : std::uint8_t { kNo, kShared, kExclusive } latched_ = Latched::kNo;
  };

  explicit ResidentWrites(BufferManager& manager) : manager_(manager) {}
  // Counts this object's fixes into the manager's per-thread counters.
  ~ResidentWrites() {
    manager_.add_resident_reads(swizzled_hits_, page_table_lookups_, leaf_reads_retried_);
  }
  ResidentWrites(const ResidentWrites&) = delete;
  ResidentWrites& operator=(const ResidentWrites&) = delete;

  Guard fix(Swip& swip, Guard* parent) {
    const Swip seen = Swip::load(swip);  // a miss beside may swizzle it: read it once
    FrameHeader* frame;
    if (seen.is_swizzled()) [[likely]] {
      ++swizzled_hits_;
      frame = seen.frame<FrameHeader>();
    } else {
      frame = fix_unswizzled(seen, swip, parent);
    }
    // A frame let go: the page moved beside this change after the swip was read. Run again.
    if (frame->has(frame_flag::kLetGo)) [[unlikely]] {
      to_load_.anything = true;
      throw RetryExclusively{};
    }
    frame->mark_referenced();
    return Guard(this, frame);
  }

  // A leaf the B-tree is about to read, or to change (where it is: its change claims the runs
  // it writes first). A read of a leaf not whole in DRAM latches it exclusively too: a line
  // it misses is loaded beside the changes only under that latch (Guard::load).
  void latch_leaf(Guard& leaf, bool for_change) {
    assert(leaf.latched_ == Guard::Latched::kNo);
    if (!for_change && leaf.whole_ != nullptr) {
      leaf.frame_->latch_shared();
      leaf.latched_ = Guard::Latched::kShared;
    } else {
      leaf.frame_->latch_exclusive();
      leaf.latched_ = Guard::Latched::kExclusive;
    }
    // A load beside may have moved the page to a new frame meanwhile: this one is left alone.
    if (leaf.frame_->has(frame_flag::kLetGo)) [[unlikely]]
      let_go_under(leaf);
  }
  // Runs read() on a leaf that no latch_leaf latched, without a latch: again while a change
  // ran beside it (the frame's version moved), after a few tries under the shared latch, which
  // waits its turn. read() must stay inside the page whatever bytes it finds (the B-tree bounds
  // its counts) and may write only what the next try writes over.
  template <typename Read>
  auto read_leaf(Guard& leaf, Read&& read) {
    assert(leaf.latched_ == Guard::Latched::kNo);
    for (unsigned attempt = 0; attempt < kOptimisticAttempts; ++attempt) {
      const FrameHeader* frame = leaf.frame_;  // a load in read() may move the page
      const std::uint64_t version = frame->optimistic_version();
      auto result = [&] {
        [[maybe_unused]] const IgnoringRacingReads ignoring;
        return read();
      }();
      if (leaf.frame_ == frame && frame->unchanged_since(version)) [[likely]] {
        // The flag is set before the version moves: a frame let go since is seen so.
        if (frame->has(frame_flag::kLetGo)) [[unlikely]]
          let_go_under(leaf);
        return result;
      }
      ++leaf_reads_retried_;
    }
    latch_leaf(leaf, false);
    return read();
  }

  // A leaf split beside the changes, under the tree's structure version (btree/btree.hpp,
  // kSplitsBeside). Its parent latched exclusively (no descent beside latches an inner node;
  // a checkpoint writing it back or a let-go frame is waited for, or found) and made whole
  // beside the changes where it is not (a mini page is promoted: the guard follows it).
  void latch_parent(Guard& parent) {
    assert(parent.latched_ == Guard::Latched::kNo);
    parent.frame_->latch_exclusive();
    parent.latched_ = Guard::Latched::kExclusive;
    if (parent.frame_->has(frame_flag::kLetGo)) [[unlikely]]
      let_go_under(parent);
    if (parent.whole_ == nullptr) {
      if (parent.load(0, kPageSize) == nullptr) {
        to_load_.anything = true;
        throw RetryExclusively{};
      }
      parent.whole_ = data_if_whole(parent.frame_);
      assert(parent.whole_ != nullptr);
    }
  }
  // The new leaf in a free frame, latched (none free: RetryExclusively, as for a miss).
  Guard allocate_page() {
    FrameHeader* frame;
    try {
      frame = manager_.allocate_page_beside_changes();
    } catch (const RetryExclusively&) {
      to_load_.anything = true;
      throw;
    }
    Guard page(this, frame);
    page.latched_ = Guard::Latched::kExclusive;
    return page;
  }
  // Within the latched parent, and the new leaf's swip stored there: under the miss latch
  // (tiers/changer_splits.cpp).
  void move_swips(Guard& to, std::uint32_t offset, Guard*, Swip* swips, std::uint32_t count) {
    assert(to.latched_ == Guard::Latched::kExclusive && to.whole_ != nullptr);
    manager_.move_swips_beside_changes(to.frame_, offset, swips, count);
  }
  void store_swip(Guard& node, std::uint32_t offset, Swip swip) {
    assert(node.latched_ == Guard::Latched::kExclusive && node.whole_ != nullptr);
    manager_.store_swip_beside_changes(node.frame_, offset, swip);
  }
  Swip swip_of(const Guard& guard) { return Swip::from_page_id(guard.page_id()); }
  void add_split_beside() { manager_.add_split_beside(); }

  // Any other split, a merge or a new root: the exclusive latch's.
  [[noreturn]] void refuse_structure_change() {
    structure_refused_ = true;
    throw RetryExclusively{};
  }
  bool structure_refused() const { return structure_refused_; }
  // What the last try stopped at that a reader could load (BTree::bring_leaf_in): anything
  // at all (a page on the way not in DRAM, a line not resident), and the runs its leaf change
  // claimed that were not resident in one piece.
  struct ToLoad {
    bool anything = false;
    std::array<ByteRange, 3> runs{};
    std::size_t run_count = 0;
    std::span<const ByteRange> leaf_runs() const { return {runs.data(), run_count}; }
  };
  const ToLoad& to_load() const { return to_load_; }
  bool needs_loading() const { return to_load_.anything; }

 private:
  // Through the page table; a page not in DRAM (or being read from SSD) and a swip to
  // swizzle go to the miss latch beside the changes, and where no frame is free there, the
  // caller brings the path in as a reader.
  [[gnu::noinline]] FrameHeader* fix_unswizzled(Swip seen, Swip& swip, Guard* parent) {
    FrameHeader* parent_frame = parent != nullptr ? parent->frame_ : nullptr;
    FrameHeader* frame = manager_.frame_in_dram(seen.page_id());
    if (frame != nullptr && !frame->has(frame_flag::kLoading) &&
        !manager_.would_swizzle(swip, frame, parent_frame)) {
      ++page_table_lookups_;
      return frame;
    }
    try {
      return manager_.fix_beside_changes(swip, parent_frame);
    } catch (const RetryExclusively&) {
      to_load_.anything = true;
      throw;
    }
  }
  // The leaf's frame was let go (its page moved beside this change): the operation runs
  // again, finding the page where it is now.
  [[noreturn]] void let_go_under(Guard& leaf) {
    leaf.release();
    to_load_.anything = true;
    throw RetryExclusively{};
  }
  void note_to_load(const ByteRange& run) {
    to_load_.anything = true;
    if (to_load_.run_count < to_load_.runs.size()) to_load_.runs[to_load_.run_count++] = run;
  }

  BufferManager& manager_;
  std::uint64_t swizzled_hits_ = 0;
  std::uint64_t page_table_lookups_ = 0;
  std::uint64_t leaf_reads_retried_ = 0;
  ToLoad to_load_;
  bool structure_refused_ = false;
};

}  // namespace tristore
