#pragma once
// Frames the buffer manager let go of while readers beside it (tiers/resident_reads.hpp) may
// still be looking at them: an evicted frame, a mini page replaced by a larger copy or
// promoted. They go back to the pool only once every reader inside when they were let go has
// left (common/reader_slots.hpp), so a reader never sees a frame reused under it. They are
// pictured in batches, one per miss: a picture costs one load per thread slot.
//
// Changes beside each other (tiers/resident_writes.hpp) hold no reader slot: a frame let go
// beside them (a mini page sorted into a copy or promoted) waits until no change may be
// inside, that is until a miss served beside readers or under the exclusive latch reclaims.
#include <cstddef>
#include <deque>
#include <utility>
#include <vector>

#include "common/reader_slots.hpp"
#include "tiers/frame.hpp"

namespace tristore {

class RetiredFrames {
 public:
  void retire(FrameHeader* frame) {
    frame->set(frame_flag::kRetired);
    waiting_.push_back(frame);
  }
  void retire_beside_changes(FrameHeader* frame) {
    frame->set(frame_flag::kRetired);
    beside_changes_.push_back(frame);
  }
  bool empty() const { return waiting_.empty() && batches_.empty() && beside_changes_.empty(); }
  std::size_t size() const {
    std::size_t frames = waiting_.size() + beside_changes_.size();
    for (const Batch& batch : batches_) frames += batch.frames.size();
    return frames;
  }

  // Pictures the readers inside now for the frames retired since the last picture: called
  // once they are unlinked (at the end of each miss), so that they come back as soon as these
  // readers leave.
  void picture_readers(const ReaderSlots* readers) {
    if (waiting_.empty()) return;
    batches_.push_back({readers != nullptr ? readers->snapshot() : ReaderSlots::Snapshot{},
                        std::exchange(waiting_, {})});
  }

  // Hands every frame whose readers have left to release(frame) and returns how many. Without
  // readers (null), all go; those let go beside changes only while no change may be inside.
  template <typename Release>
  std::size_t reclaim(const ReaderSlots* readers, bool changes_inside, Release&& release) {
    picture_readers(readers);
    std::size_t released = 0;
    if (!changes_inside) {
      for (FrameHeader* frame : beside_changes_) release(frame);
      released += beside_changes_.size();
      beside_changes_.clear();
    }
    while (!batches_.empty() &&
           (readers == nullptr || readers->left_since(batches_.front().picture))) {
      for (FrameHeader* frame : batches_.front().frames) release(frame);
      released += batches_.front().frames.size();
      batches_.pop_front();
    }
    return released;
  }

 private:
  struct Batch {
    ReaderSlots::Snapshot picture;
    std::vector<FrameHeader*> frames;
  };
  std::vector<FrameHeader*> waiting_;  // retired since the last picture
  std::deque<Batch> batches_;          // oldest first
  std::vector<FrameHeader*> beside_changes_;
};

}  // namespace tristore
