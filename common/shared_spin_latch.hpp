#pragma once
// A shared/exclusive spin latch over one 32-bit word that its owner keeps wherever it likes
// (main-memory keeps one per page, in memory mapped as zeros: a zero word is unlatched).
// Bit 31 is the exclusive holder, the bits below count shared holders. For short sections
// (one leaf entry), waiting as spin_back_off does; a thread that holds one latch must not wait
// for another, as nothing orders them.
#include <atomic>
#include <cstdint>

#include "common/spin_latch.hpp"

namespace tristore {

class SharedSpinLatch {
 public:
  explicit SharedSpinLatch(std::uint32_t& word) : word_(word) {}

  void lock_shared() {
    for (unsigned spins = 0;; spin_back_off(spins++)) {
      std::uint32_t word = word_.load(std::memory_order_relaxed);
      if ((word & kExclusive) != 0 || (word & kSharedMask) == kSharedMask) continue;
      if (word_.compare_exchange_weak(word, word + 1, std::memory_order_acquire,
                                      std::memory_order_relaxed))
        return;
    }
  }
  void unlock_shared() { word_.fetch_sub(1, std::memory_order_release); }

  void lock() {
    for (unsigned spins = 0;; spin_back_off(spins++)) {
      std::uint32_t word = word_.load(std::memory_order_relaxed);
      if (word != 0) continue;
      if (word_.compare_exchange_weak(word, kExclusive, std::memory_order_acquire,
                                      std::memory_order_relaxed))
        return;
    }
  }
  void unlock() { word_.store(0, std::memory_order_release); }

 private:
  static constexpr std::uint32_t kExclusive = std::uint32_t{1} << 31;
  static constexpr std::uint32_t kSharedMask = kExclusive - 1;

  std::atomic_ref<std::uint32_t> word_;
};

}  // namespace tristore
