#pragma once
// How many operations a benchmark thread runs between two reads of the clock: doubled (up to
// kMaxBatch) while a batch takes less than the short time given, halved once one takes longer.
// So fast operations (~1 us) pay for the clock rarely, and slow ones (an SSD read, a full scan)
// do not overrun a deadline or a sampling interval's end.
#include <chrono>
#include <cstdint>

namespace tristore {

class AdaptiveBatch {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::uint64_t kMaxBatch = 64;

  explicit AdaptiveBatch(Clock::duration short_batch) : short_batch_(short_batch) {}
  std::uint64_t size() const { return size_; }
  // After a batch that took `took`.
  void adapt(Clock::duration took) {
    if (took < short_batch_) {
      if (size_ < kMaxBatch) size_ *= 2;
    } else if (size_ > 1) {
      size_ /= 2;
    }
  }

 private:
  Clock::duration short_batch_;
  std::uint64_t size_ = 1;
};

}  // namespace tristore
