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
// starved. Neither side spins long: on an oversubscribed machine the holder may be waiting
// for the core.
#include <emmintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "common/error.hpp"
#include "common/thread_slot.hpp"

namespace tristore {

class OperationLatch {
 public:
  OperationLatch() = default;
  OperationLatch(const OperationLatch&) = delete;
  OperationLatch& operator=(const OperationLatch&) = delete;

  void lock_shared() {
    refuse_nested();
    ReaderSlot& slot = slots_[thread_slot()];
    for (;;) {
      slot.readers.fetch_add(1, std::memory_order_seq_cst);
      if (!writer_.load(std::memory_order_seq_cst)) [[likely]] {
        held_by_this_thread = this;
        return;
      }
      slot.readers.fetch_sub(1, std::memory_order_release);
      for (unsigned spins = 0; writer_.load(std::memory_order_acquire); ++spins) back_off(spins);
    }
  }
  void unlock_shared() {
    held_by_this_thread = nullptr;
    slots_[thread_slot()].readers.fetch_sub(1, std::memory_order_release);
  }

  void lock() {
    refuse_nested();
    // The flag is the writers' lock too: operations are short, so a writer spins (then
    // yields) rather than sleeping in the kernel, as a mutex would under contention.
    for (unsigned spins = 0; writer_.exchange(true, std::memory_order_seq_cst); ++spins)
      back_off(spins);
    // Threads that take a slot after this load see the flag before they read anything.
    const std::size_t slots = thread_slots_in_use();
    for (std::size_t i = 0; i < slots; ++i)
      for (unsigned spins = 0; slots_[i].readers.load(std::memory_order_seq_cst) != 0; ++spins)
        back_off(spins);
    held_by_this_thread = this;
  }
  void unlock() {
    held_by_this_thread = nullptr;
    writer_.store(false, std::memory_order_release);
  }

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
    explicit Exclusive(OperationLatch& latch) : latch_(latch) { latch_.lock(); }
    ~Exclusive() { latch_.unlock(); }
    Exclusive(const Exclusive&) = delete;
    Exclusive& operator=(const Exclusive&) = delete;

   private:
    OperationLatch& latch_;
  };

 private:
  struct alignas(64) ReaderSlot {
    std::atomic<std::uint32_t> readers{0};  // a count: threads beyond kThreadSlots share slots
  };

  // A call from inside another on the same thread (a scan's visit function calling the
  // database) would wait for itself forever: it is an Error instead.
  void refuse_nested() const {
    if (held_by_this_thread == this) [[unlikely]]
      fail("a database call from inside another (a scan's visit function?) is not allowed");
  }
  static void back_off(unsigned spins) {
    if (spins < 64)
      _mm_pause();
    else
      std::this_thread::yield();
  }

  static inline thread_local const OperationLatch* held_by_this_thread = nullptr;
  std::array<ReaderSlot, kThreadSlots> slots_;
  alignas(64) std::atomic<bool> writer_{false};
};

}  // namespace tristore
