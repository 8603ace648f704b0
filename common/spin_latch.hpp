#pragma once
// Waiting for another thread's short section, and a latch built on it.
//
// spin_back_off: a waiter spins (pause) a little, then yields the core, for the holder may be
// waiting for it (more threads than cores). Spinning 2,048 pauses before yielding was tried:
// no clear gain beside busy processes, and TPC-C on 2 threads lost ~4 % on a quiet machine.
//
// SpinLatch, for sections threads seldom contend for (the buffer manager's miss latch): test,
// then test-and-set, so that waiters read the line rather than take it from the holder; it
// never sleeps in the kernel. BasicLockable, for std::lock_guard.
#include <emmintrin.h>

#include <atomic>
#include <thread>

namespace tristore {

inline constexpr unsigned kSpinsBeforeYield = 64;

// One step of a wait that has taken `spins` steps so far.
inline void spin_back_off(unsigned spins) {
  if (spins < kSpinsBeforeYield)
    _mm_pause();
  else
    std::this_thread::yield();
}

class SpinLatch {
 public:
  SpinLatch() = default;
  SpinLatch(const SpinLatch&) = delete;
  SpinLatch& operator=(const SpinLatch&) = delete;

  void lock() {
    for (unsigned spins = 0;
         held_.load(std::memory_order_relaxed) || held_.exchange(true, std::memory_order_acquire);
         ++spins)
      spin_back_off(spins);
  }
  bool try_lock() {
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

}  // namespace tristore
