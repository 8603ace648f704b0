#pragma once
// The fences of optimistic reads (FrameHeader::optimistic_version in tiers/frame.hpp,
// SharedSpinLatch::optimistic_version in common/shared_spin_latch.hpp): a latch holder's
// writes stay after its latch bit, and a reader's reads before its validating load.
// ThreadSanitizer supports no thread fence and is told to ignore the reads they order
// (common/ignoring_racing_reads.hpp): its builds keep the compiler's order only (x86 keeps
// loads in order, and stores).
#include <atomic>

namespace tristore {

inline void optimistic_read_fence(std::memory_order order) {
#if defined(__SANITIZE_THREAD__)
  std::atomic_signal_fence(order);
#else
  std::atomic_thread_fence(order);
#endif
}

}  // namespace tristore
