#pragma once
// A latch for short sections that threads seldom contend for (the buffer manager's miss
// latch): test, then test-and-set, so that waiters read the line rather than take it from
// the holder. It spins, then yields, never sleeping in the kernel: on an oversubscribed
// machine the holder may be waiting for the core. BasicLockable, for std::lock_guard.
#include <emmintrin.h>

#include <atomic>
#include <thread>

namespace tristore {

class SpinLatch {
 public:
  SpinLatch() = default;
  SpinLatch(const SpinLatch&) = delete;
  SpinLatch& operator=(const SpinLatch&) = delete;

  void lock() {
    for (unsigned spins = 0;
         held_.load(std::memory_order_relaxed) || held_.exchange(true, std::memory_order_acquire);
         ++spins) {
      if (spins < 64)
        _mm_pause();
      else
        std::this_thread::yield();
    }
  }
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

}  // namespace tristore
