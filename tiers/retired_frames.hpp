#pragma once
// Frames the buffer manager let go of while readers beside it (tiers/resident_reads.hpp) may
// still be looking at them: an evicted frame, a mini page replaced by a larger copy or
// promoted. They go back to the pool only once every reader inside when they were let go has
// left (common/reader_slots.hpp), so a reader never sees a frame reused under it. They are
// pictured in batches, one per miss: a picture costs one load per thread slot.
//
// Changes beside each other (tiers/resident_writes.hpp) announce themselves in slots of their
// own (the changers'): a frame let go beside them (evicted, a mini page sorted into a copy or
// promoted) waits until every change inside when it was let go has left, or until no change
// may be inside (a miss served beside readers or under the exclusive latch). Without the
// changers' slots, only the latter.
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
    changes_waiting_.push_back(frame);
  }
  // Asked at every allocation: no walk over the batches.
  bool empty() const {
    return waiting_.empty() && batches_.empty() && changes_waiting_.empty() &&
           changes_batches_.empty();
  }
  std::size_t size() const {
    std::size_t frames = waiting_.size() + changes_waiting_.size();
    for (const Batch& batch : batches_) frames += batch.frames.size();
    for (const Batch& batch : changes_batches_) frames += batch.frames.size();
    return frames;
  }

  // Pictures the readers, and the changers, inside now for the frames retired since the last
  // picture: called once they are unlinked (at the end of each miss), so that they come back
  // as soon as these threads leave. Without the changers' slots (null), frames let go beside
  // changes wait for a time no change may be inside.
  void picture(const ReaderSlots* readers, const ReaderSlots* changers) {
    picture_into(batches_, waiting_, readers);
    if (changers != nullptr) picture_into(changes_batches_, changes_waiting_, changers);
  }

  // Hands every frame whose readers (or changers) have left to release(frame) and returns how
  // many. Without readers (null), all frames retired beside readers go; all those retired
  // beside changes, where no change may be inside.
  template <typename Release>
  std::size_t reclaim(const ReaderSlots* readers, const ReaderSlots* changers, bool changes_inside,
                      Release&& release) {
    picture(readers, changers);
    std::size_t released = release_left(batches_, readers, release);
    if (!changes_inside) {
      for (FrameHeader* frame : changes_waiting_) release(frame);
      released += changes_waiting_.size();
      changes_waiting_.clear();
      changers = nullptr;  // every batch goes
    }
    return released + release_left(changes_batches_, changers, release);
  }

 private:
  struct Batch {
    ReaderSlots::Snapshot picture;
    std::vector<FrameHeader*> frames;
  };
  static void picture_into(std::deque<Batch>& batches, std::vector<FrameHeader*>& waiting,
                           const ReaderSlots* inside) {
    if (waiting.empty()) return;
    batches.push_back({inside != nullptr ? inside->snapshot() : ReaderSlots::Snapshot{},
                       std::exchange(waiting, {})});
  }
  template <typename Release>
  static std::size_t release_left(std::deque<Batch>& batches, const ReaderSlots* inside,
                                  Release& release) {
    std::size_t released = 0;
    while (!batches.empty() && (inside == nullptr || inside->left_since(batches.front().picture))) {
      for (FrameHeader* frame : batches.front().frames) release(frame);
      released += batches.front().frames.size();
      batches.pop_front();
    }
    return released;
  }

  std::vector<FrameHeader*> waiting_;          // retired beside readers since the last picture
  std::deque<Batch> batches_;                  // oldest first
  std::vector<FrameHeader*> changes_waiting_;  // retired beside changes since the last picture
  std::deque<Batch> changes_batches_;
};

}  // namespace tristore
