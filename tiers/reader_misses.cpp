// BufferManager (tiers/buffer_manager.hpp): misses of readers that hold the database latch
// shared (tiers/resident_reads.hpp), served one at a time while the other readers go on.
#include <thread>

#include <emmintrin.h>

#include "tiers/buffer_manager.hpp"

namespace tristore {

// The miss latch, held while one miss is served: misses take it in turn. It spins, then
// yields (a miss is short; on an oversubscribed machine the holder may be waiting for the
// core). While it is held, frames let go are retired, not freed.
class BufferManager::ServingReader {
 public:
  explicit ServingReader(BufferManager& manager) : manager_(manager) {
    // Test, then test-and-set: waiters read the line rather than take it from the holder.
    for (unsigned spins = 0; manager_.miss_latch_.load(std::memory_order_relaxed) ||
                             manager_.miss_latch_.exchange(true, std::memory_order_acquire);
         ++spins) {
      if (spins < 64)
        _mm_pause();
      else
        std::this_thread::yield();
    }
    manager_.sharing_ = true;
    ++manager_.counters_.reader_misses;
  }
  ~ServingReader() {
    manager_.retired_.picture_readers(manager_.readers_);
    manager_.sharing_ = false;
    manager_.miss_latch_.store(false, std::memory_order_release);
  }
  ServingReader(const ServingReader&) = delete;
  ServingReader& operator=(const ServingReader&) = delete;

 private:
  BufferManager& manager_;
};

bool BufferManager::is_live(const FrameHeader* frame) const {
  void* const* entry = page_table_.find(frame->page_id);
  return entry != nullptr && *entry == frame;
}

FrameHeader* BufferManager::fix_for_reader(Swip& swip, FrameHeader* parent) {
  const ServingReader serving(*this);
  try {
    // 1. Another miss may have swizzled the swip since the reader looked.
    const Swip seen = Swip::load(swip);
    if (seen.is_swizzled()) return seen.frame<FrameHeader>();
    // 2. The parent (or the full frame its promotion made) stays while its child is loaded.
    //    A parent let go meanwhile holds bytes that are no page's any more: its swip is
    //    followed, not swizzled, and the parent is not fixed (it is not reused meanwhile).
    FullFrame* holder = parent != nullptr ? holding_full_frame(parent) : nullptr;
    FrameHeader* page_frame = holder != nullptr ? &holder->header : parent;
    const bool parent_live = page_frame != nullptr && is_live(page_frame);
    Guard parent_guard = parent_live ? pin(page_frame) : Guard();
    const bool may_swizzle = parent == nullptr || (holder != nullptr && parent_live);
    Guard child = fix_through_table(swip, parent_live ? &parent_guard : nullptr, may_swizzle);
    return child.frame_;  // the guard unfixes it: readers hold no fixes
  } catch (const RetryExclusively&) {
    ++counters_.reader_retries;
    throw;
  }
}

const std::byte* BufferManager::read_for_reader(FrameHeader*& frame, std::uint32_t offset,
                                                std::uint32_t length) {
  const ServingReader serving(*this);
  try {
    // 1. The page's frame now: the reader's may have been evicted, replaced or promoted.
    const PageId page_id = frame->page_id;
    FrameHeader* current;
    void* const* entry = page_table_.find(page_id);
    if (entry != nullptr && (nvm_ == nullptr || !nvm_->in_slot_area(*entry))) {
      current = static_cast<FrameHeader*>(*entry);
    } else {
      Swip by_id = Swip::from_page_id(page_id);
      current = fix_through_table(by_id, nullptr, false).frame_;
    }
    // 2. Its lines, loaded if missing; a mini page may give way to a copy or a full frame,
    //    which the page table then names.
    const std::byte* bytes;
    {
      Guard guard = pin(current);
      bytes = make_resident(current, offset, length);
    }
    frame = static_cast<FrameHeader*>(*page_table_.find(page_id));
    return bytes;
  } catch (const RetryExclusively&) {
    ++counters_.reader_retries;
    throw;
  }
}

}  // namespace tristore
