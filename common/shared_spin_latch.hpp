#pragma once
// A shared/exclusive spin latch with a version, over one 64-bit word that its owner keeps
// wherever it likes (main-memory keeps one per page, in memory mapped as zeros: a zero word is
// unlatched). Bit 63 is the exclusive holder, bit 62 an exclusive waiter, bits 48..61 count
// shared holders, bits 0..47 are the version, which each exclusive hold moves when it ends: a
// reader may read the data the latch guards without taking it (optimistic_version, read,
// unchanged_since: vmcache's shape) and so writes nothing shared. A waiter for exclusive raises
// bit 62, and no new shared holder comes in while it is up: scans that copy a hot leaf one
// after another would otherwise keep its count above zero and the change waiting for as long
// as they go on (seen as aborts starved 1000 to 1 by two scanning threads). For short sections
// (one leaf entry), waiting as spin_back_off does; a thread that holds one latch must not wait
// for another, as nothing orders them.
#include <atomic>
#include <cstdint>

#include "common/optimistic_read_fence.hpp"
#include "common/spin_latch.hpp"

namespace tristore {

class SharedSpinLatch {
 public:
  explicit SharedSpinLatch(std::uint64_t& word) : word_(word) {}

  void lock_shared() {
    for (unsigned spins = 0;; spin_back_off(spins++)) {
      std::uint64_t word = word_.load(std::memory_order_relaxed);
      if ((word & (kExclusive | kExclusiveWaiting)) != 0 || (word & kCountMask) == kCountMask)
        continue;
      if (word_.compare_exchange_weak(word, word + kShared, std::memory_order_acquire,
                                      std::memory_order_relaxed))
        return;
    }
  }
  void unlock_shared() { word_.fetch_sub(kShared, std::memory_order_release); }

  // Raises the waiter bit while shared holders are inside (a compare-and-swap from a word
  // without the exclusive bit, as every other), so that they drain.
  void lock() {
    for (unsigned spins = 0; !try_lock(); spin_back_off(spins++)) {
      std::uint64_t word = word_.load(std::memory_order_relaxed);
      if ((word & (kExclusive | kExclusiveWaiting)) == 0 && (word & kCountMask) != 0)
        word_.compare_exchange_weak(word, word | kExclusiveWaiting, std::memory_order_relaxed,
                                    std::memory_order_relaxed);
    }
  }
  // Exclusive if nobody holds the word now (a spurious failure is possible); never waits. It
  // takes the waiter bit down: another waiter raises it again.
  bool try_lock() {
    std::uint64_t word = word_.load(std::memory_order_relaxed);
    if ((word & (kExclusive | kCountMask)) != 0) return false;
    if (!word_.compare_exchange_weak(word, (word & kVersionMask) | kExclusive,
                                     std::memory_order_acquire, std::memory_order_relaxed))
      return false;
    // The holder's writes stay after the bit (optimistic readers see it or miss them).
    optimistic_read_fence(std::memory_order_release);
    return true;
  }
  // A plain store: while bit 63 is set nothing else writes the word (the others compare and
  // swap only from a word without it). The version moves on.
  void unlock() {
    const std::uint64_t word = word_.load(std::memory_order_relaxed);
    word_.store(((word & kVersionMask) + 1) & kVersionMask, std::memory_order_release);
  }

  // The word once no exclusive hold is under way (shared holders left out), to compare with
  // unchanged_since after the read.
  std::uint64_t optimistic_version() const {
    for (unsigned spins = 0;; spin_back_off(spins++)) {
      const std::uint64_t word = word_.load(std::memory_order_acquire);
      if ((word & kExclusive) == 0) return word & kVersionMask;
    }
  }
  // Whether no exclusive hold began or ended since optimistic_version returned seen: then
  // every byte read in between is as one hold left it.
  bool unchanged_since(std::uint64_t seen) const {
    optimistic_read_fence(std::memory_order_acquire);
    return (word_.load(std::memory_order_relaxed) & ~kSharedMask) == seen;
  }

  static constexpr std::uint64_t kExclusive = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kExclusiveWaiting = std::uint64_t{1} << 62;
  static constexpr std::uint64_t kShared = std::uint64_t{1} << 48;
  static constexpr std::uint64_t kCountMask = kExclusiveWaiting - kShared;
  static constexpr std::uint64_t kSharedMask = kExclusive - kShared;  // the count and the waiter
  static constexpr std::uint64_t kVersionMask = kShared - 1;

 private:
  std::atomic_ref<std::uint64_t> word_;
};

}  // namespace tristore
