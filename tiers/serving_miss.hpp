#pragma once
// The miss latch held while one miss is served beside other threads: a reader's
// (tiers/reader_misses.cpp, flag sharing_) or a change's (tiers/changer_misses.cpp, flag
// changing_). Misses take it in turn; while it is held, frames let go are retired, not freed.
// On leaving, the readers and the changers inside are pictured for the frames retired
// meanwhile (tiers/retired_frames.hpp). A checkpoint beside
// changes picks each frame to write back under the latch too (write_back_beside), so neither
// sees the other's frame or swip half made, and writes it there or, held by its frame latch,
// once the miss latch is let go (writes_back_beside_misses).
#include "tiers/buffer_manager.hpp"

namespace tristore {

class BufferManager::ServingMiss {
 public:
  ServingMiss(BufferManager& manager, bool BufferManager::*beside)
      : manager_(manager), beside_(beside) {
    // A wait is counted (under the latch, as the other counters are): how often misses take
    // turns here is what would call for a latch per page table partition.
    const bool waited = !manager_.miss_latch_.try_lock();
    if (waited) manager_.miss_latch_.lock();
    manager_.*beside_ = true;
    ++manager_.counters_.miss_latch_holds;
    if (waited) ++manager_.counters_.miss_latch_waits;
  }
  ~ServingMiss() {
    manager_.retired_.picture(manager_.readers_, manager_.changers_);
    manager_.*beside_ = false;
    manager_.miss_latch_.unlock();
  }
  ServingMiss(const ServingMiss&) = delete;
  ServingMiss& operator=(const ServingMiss&) = delete;

 private:
  BufferManager& manager_;
  bool BufferManager::*beside_;
};

}  // namespace tristore
