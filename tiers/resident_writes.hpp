#pragma once
// Changes of single leaf entries side by side, while the database latch is held for changes
// (engine/operation_latch.hpp): no reader outside a transaction and no exclusive holder runs,
// so the buffer pool, the page table, the swips and every inner node stay as they are; only
// leaf entries change. So inner nodes are read without a latch, and leaves are latched in
// their frame (latch_leaf: FrameHeader::latch_shared, or latch_exclusive for a change). A
// thread holds at most one frame latch at a time, so the latches cannot deadlock. A lookup
// reads its leaf optimistically instead (read_leaf): it writes nothing shared, and reads again
// if a change ran beside it.
//
// Anything more (a page not in DRAM, a swip to swizzle, a line not resident, a leaf to split
// or merge, a leaf to change that is not a full frame with every line resident) throws
// RetryExclusively before anything is changed, and the caller runs the operation again under
// the exclusive latch; where only loading was missing (needs_loading), it may first load
// the path as a reader and try beside once more. Fixes are counted per thread
// (BufferManager::add_resident_reads).
//
// It models PageAccess for lookups and single-entry changes; allocate_page, move_swips,
// swip_of and free_page must never be reached (the B-tree refuses first: refuse_structure_change)
// and throw std::logic_error.
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "common/ignoring_racing_reads.hpp"
#include "common/types.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/frame.hpp"
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
        : manager_(other.manager_),
          frame_(std::exchange(other.frame_, nullptr)),
          whole_(std::exchange(other.whole_, nullptr)),
          needs_loading_(other.needs_loading_),
          latched_(std::exchange(other.latched_, Latched::kNo)) {}
    Guard& operator=(Guard&& other) noexcept {
      if (this != &other) {
        release();
        manager_ = other.manager_;
        frame_ = std::exchange(other.frame_, nullptr);
        whole_ = std::exchange(other.whole_, nullptr);
        needs_loading_ = other.needs_loading_;
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
      // A missing line is not this thread's to load here.
      if (const std::byte* bytes = resident_bytes(frame_, offset, length)) return bytes;
      *needs_loading_ = true;
      throw RetryExclusively{};
    }
    // Only the leaf latched for its change, a full frame with every line resident.
    std::byte* write(std::uint32_t offset, std::uint32_t length) {
      assert(latched_ == Latched::kExclusive && whole_ != nullptr);
      manager_->mark_written(frame_, offset, length);
      return whole_ + offset;
    }
    std::byte* whole_page() const {
      if (whole_ == nullptr) {
        *needs_loading_ = true;
        throw RetryExclusively{};
      }
      return whole_;
    }
    void mark_dirty(std::uint32_t offset, std::uint32_t length) {
      assert(latched_ == Latched::kExclusive && whole_ != nullptr);
      manager_->mark_written(frame_, offset, length);
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
    Guard(BufferManager* manager, FrameHeader* frame, bool* needs_loading)
        : manager_(manager),
          frame_(frame),
          whole_(data_if_whole(frame)),
          needs_loading_(needs_loading) {}

    BufferManager* manager_ = nullptr;
    FrameHeader* frame_ = nullptr;   // latched when latched_ says so
    std::byte* whole_ = nullptr;     // frame_'s data when it is a full frame, all lines resident
    bool* needs_loading_ = nullptr;  // its ResidentWrites' flag
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
    FrameHeader* frame;
    if (swip.is_swizzled()) [[likely]] {
      ++swizzled_hits_;
      frame = swip.frame<FrameHeader>();
    } else {
      frame = manager_.frame_in_dram(swip.page_id());
      if (frame == nullptr) {
        needs_loading_ = true;
        throw RetryExclusively{};
      }
      // Swizzling writes the parent and the child's back-reference: the exclusive latch's.
      if (manager_.would_swizzle(swip, frame, parent != nullptr ? parent->frame_ : nullptr))
        throw RetryExclusively{};
      ++page_table_lookups_;
    }
    // Nothing leads to a frame let go once no reader is inside; should it, leave it alone.
    if (frame->has(frame_flag::kLetGo)) [[unlikely]]
      throw RetryExclusively{};
    frame->mark_referenced();
    return Guard(&manager_, frame, &needs_loading_);
  }

  // A leaf the B-tree is about to read, or to change. A leaf to change that is not whole in
  // a full frame is left to the exclusive latch (its change might need a line loaded halfway
  // through); its bytes are read anew under the latch.
  void latch_leaf(Guard& leaf, bool for_change) {
    assert(leaf.latched_ == Guard::Latched::kNo);
    if (!for_change) {
      leaf.frame_->latch_shared();
      leaf.latched_ = Guard::Latched::kShared;
      return;
    }
    if (leaf.whole_ == nullptr) {
      needs_loading_ = true;
      throw RetryExclusively{};
    }
    leaf.frame_->latch_exclusive();
    leaf.latched_ = Guard::Latched::kExclusive;
  }
  // Runs read() on a leaf that no latch_leaf latched, without a latch: again while a change
  // ran beside it (the frame's version moved), after a few tries under the shared latch, which
  // waits its turn. read() must stay inside the page whatever bytes it finds (the B-tree bounds
  // its counts) and may write only what the next try writes over.
  template <typename Read>
  auto read_leaf(Guard& leaf, Read&& read) {
    assert(leaf.latched_ == Guard::Latched::kNo);
    const FrameHeader* frame = leaf.frame_;
    for (unsigned attempt = 0; attempt < kOptimisticAttempts; ++attempt) {
      const std::uint64_t version = frame->optimistic_version();
      auto result = [&] {
        [[maybe_unused]] const IgnoringRacingReads ignoring;
        return read();
      }();
      if (frame->unchanged_since(version)) [[likely]]
        return result;
      ++leaf_reads_retried_;
    }
    latch_leaf(leaf, false);
    return read();
  }
  static constexpr unsigned kOptimisticAttempts = 4;

  // A split, a merge or a new root: the exclusive latch's.
  [[noreturn]] void refuse_structure_change() { throw RetryExclusively{}; }
  // Whether the last try stopped at something to load: a page on the way not in DRAM, a line
  // not resident, a leaf to change not whole in a full frame (BTree::read_leaf_whole loads
  // them all as a reader would).
  bool needs_loading() const { return needs_loading_; }

 private:
  BufferManager& manager_;
  std::uint64_t swizzled_hits_ = 0;
  std::uint64_t page_table_lookups_ = 0;
  std::uint64_t leaf_reads_retried_ = 0;
  bool needs_loading_ = false;
};

}  // namespace tristore
