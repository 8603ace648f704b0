// BufferManager (tiers/buffer_manager.hpp): misses of changes beside each other, which hold
// the database latch for changes (tiers/resident_writes.hpp). A page not in DRAM is loaded
// into a free frame, and a swip swizzled, under the miss latch while the other changes go on;
// nothing is evicted or let go beside changes: where no frame is free, the change brings its
// path in as a reader (whose misses evict ahead) and tries beside again.
#include "tiers/buffer_manager.hpp"

namespace tristore {

// The miss latch, held while one change's miss is served. A checkpoint beside changes writes
// each frame back under it too (write_back_beside), so neither sees the other's frame or swip
// half made.
class BufferManager::ServingChanger {
 public:
  explicit ServingChanger(BufferManager& manager) : manager_(manager) {
    manager_.miss_latch_.lock();
    manager_.changing_ = true;
  }
  ~ServingChanger() {
    manager_.changing_ = false;
    manager_.miss_latch_.unlock();
  }
  ServingChanger(const ServingChanger&) = delete;
  ServingChanger& operator=(const ServingChanger&) = delete;

 private:
  BufferManager& manager_;
};

FrameHeader* BufferManager::fix_beside_changes(Swip& swip, FrameHeader* parent) {
  SsdLoad load;  // a read of the page from SSD, outside the miss latch
  for (bool counted = false;; counted = true) {
    if (load.frame != nullptr) await_ssd_load(load);
    const ServingChanger serving(*this);
    if (!counted) ++counters_.changer_misses;
    if (load.mine) finish_ssd_load(load);
    load = SsdLoad{};
    // 1. Another miss may have swizzled the swip since the changer looked.
    const Swip seen = Swip::load(swip);
    if (seen.is_swizzled()) return seen.frame<FrameHeader>();
    // 2. The page's frame: found, loaded from NVM into a free frame, or (the next round)
    //    read from SSD outside the latch. No free frame: RetryExclusively.
    FrameHeader* child = find_or_load(seen.page_id(), &load);
    if (child == nullptr) continue;
    // 3. Swizzled as a fix would. Changers read the swip once and atomically; the parent is
    //    an inner node, which no changer writes, and its write-back waits for the miss latch.
    if (swizzling_ && would_swizzle(swip, child, parent)) {
      FullFrame* holder = parent != nullptr ? holding_full_frame(parent) : nullptr;
      if (holder == nullptr)
        swizzle(swip, child, nullptr);
      else if (is_live(&holder->header))
        swizzle(swip, child, &holder->header);
    }
    return child;
  }
}

}  // namespace tristore
