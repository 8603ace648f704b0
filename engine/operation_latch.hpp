#pragma once
// The latch that lets many threads share one Database while the buffer manager and the
// B-tree have no latches of their own (docs/design.md section 8): an operation that writes
// nothing shared (a read outside any transaction, on a path already in DRAM) holds it shared;
// every other operation holds it exclusive.
//
// Readers must not share a written cache line, or two cores reading the same table would
// spend their time passing that line back and forth. So each thread announces itself in its
// own slot (by a per-thread index), and a writer raises its flag and then waits for every
// slot to drain. A reader that finds the flag raised steps back and waits, so writers are not
// starved. Both sides wait as common/spin_latch.hpp says: spin for a short section's length,
// then yield (on an oversubscribed machine the holder may be waiting for the core).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/error.hpp"
#include "common/reader_slots.hpp"
#include "common/spin_latch.hpp"
#include "common/thread_slot.hpp"

namespace tristore {

class OperationLatch {
 public:
  OperationLatch() = default;
  OperationLatch(const OperationLatch&) = delete;
  OperationLatch& operator=(const OperationLatch&) = delete;

  // What an exclusive holder does: a change is never nested inside another call on the same
  // thread (it would wait for itself, or change what the outer call reads); a read that needs
  // the latch exclusive (it takes row locks, or charges the simulated LLC) nests inside an
  // exclusive hold.
  enum class Purpose { kChange, kRead };

  // A thread already holding the latch (a scan's visit function reading the database) holds
  // it once more, in the mode it has.
  void lock_shared() {
    if (held_latch == this) {
      ++held_depth;
      return;
    }
    for (;;) {
      readers_.enter();
      if (!writer_.load(std::memory_order_seq_cst)) [[likely]] {
        hold(this, false);
        return;
      }
      readers_.leave();
      for (unsigned spins = 0; writer_.load(std::memory_order_acquire); ++spins)
        spin_back_off(spins);
    }
  }
  void unlock_shared() {
    if (--held_depth > 0) return;
    hold(nullptr, false);
    readers_.leave();
  }

  void lock(Purpose purpose = Purpose::kChange) {
    if (held_latch == this) [[unlikely]] {
      if (purpose == Purpose::kRead && held_exclusive) {
        ++held_depth;
        return;
      }
      if (purpose == Purpose::kChange)
        fail(
            "the database cannot be changed from inside another call on the same thread (a "
            "scan's visit function may only read)");
      fail(
          "this read cannot run inside a scan that holds the database shared (its visit "
          "function may read outside transactions only)");
    }
    // The flag is the writers' lock too: operations are short, so a writer spins (then
    // yields) rather than sleeping in the kernel, as a mutex would under contention.
    for (unsigned spins = 0; writer_.exchange(true, std::memory_order_seq_cst); ++spins)
      spin_back_off(spins);
    // Threads that take a slot after this load see the flag before they read anything.
    const std::size_t slots = thread_slots_in_use();
    for (std::size_t i = 0; i < slots; ++i)
      for (unsigned spins = 0; readers_.inside(i); ++spins) spin_back_off(spins);
    hold(this, true);
  }
  void unlock() {
    if (--held_depth > 0) return;
    hold(nullptr, false);
    writer_.store(false, std::memory_order_release);
  }

  // The shared holders, for grace periods: memory they may be reading is reused only once
  // they have left (tiers/retired_frames.hpp).
  const ReaderSlots& readers() const { return readers_; }

  // Scoped holders.
  class [[nodiscard]] Shared {
   public:
    explicit Shared(OperationLatch& latch) : latch_(latch) { latch_.lock_shared(); }
    ~Shared() { latch_.unlock_shared(); }
    Shared(const Shared&) = delete;
    Shared& operator=(const Shared&) = delete;

   private:
    OperationLatch& latch_;
  };
  class [[nodiscard]] Exclusive {
   public:
    explicit Exclusive(OperationLatch& latch, Purpose purpose = Purpose::kChange) : latch_(latch) {
      latch_.lock(purpose);
    }
    ~Exclusive() { latch_.unlock(); }
    Exclusive(const Exclusive&) = delete;
    Exclusive& operator=(const Exclusive&) = delete;

   private:
    OperationLatch& latch_;
  };

 private:
  static void hold(const OperationLatch* latch, bool exclusive) {
    held_latch = latch;
    held_depth = latch != nullptr ? 1 : 0;
    held_exclusive = exclusive;
  }

  // The latch this thread holds, and how many times (nested reads), and in which mode.
  static inline thread_local const OperationLatch* held_latch = nullptr;
  static inline thread_local unsigned held_depth = 0;
  static inline thread_local bool held_exclusive = false;
  ReaderSlots readers_;
  alignas(64) std::atomic<bool> writer_{false};
};

}  // namespace tristore
