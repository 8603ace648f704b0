#pragma once
// The log bytes that live undo records (unfinished transactions, restart's losers) would take
// as copies (TransactionManager: a checkpoint copies them forward, so the log keeps room for
// them). Changes beside each other add to it at every change and take from it at every
// commit; one shared word for that is a line every change of every thread passes between
// the cores with a locked instruction. So each thread slot keeps a credit: bytes already
// counted in the shared word that no live undo uses yet. A change beside others takes from
// its slot's credit, and only goes to the shared word for a chunk when the credit runs out; a
// commit gives its bytes to the credit, and the credit beyond two chunks back to the word.
//
// So the shared word is the live undo plus every slot's credit: at least the live undo,
// which is what the room checks beside changes need (they may only say no too often), and
// at most 2 * kChunk per slot above it. The exclusive holder, whom nobody changes it beside,
// adds to the word directly, and takes every credit back (exact_exclusive) where the bound
// would not do: before it checkpoints for room, or reports how much live undo fills the log.
//
// Called with the database's operation latch held (engine/operation_latch.hpp): in changes
// mode (beside), or exclusive.
#include <array>
#include <atomic>
#include <cstdint>

#include "common/thread_slot.hpp"

namespace tristore {

class LiveUndoCount {
 public:
  static constexpr std::uint64_t kChunk = 8 * 1024;

  // At least the live undo; what room checks beside changes read.
  std::uint64_t at_least() const { return shared_.load(); }

  // By the exclusive holder (nothing is beside it), or beside other changes.
  void add(std::uint64_t bytes, bool exclusive) {
    if (exclusive)
      add_exclusive(bytes);
    else
      add_beside(bytes);
  }
  void remove(std::uint64_t bytes, bool exclusive) {
    if (exclusive)
      remove_exclusive(bytes);
    else
      remove_beside(bytes);
  }

  // Exclusive: nothing is beside the caller.
  void add_exclusive(std::uint64_t bytes) { store_shared(at_least() + bytes); }
  void remove_exclusive(std::uint64_t bytes) { store_shared(at_least() - bytes); }
  // The exact live undo: every slot's credit taken back.
  std::uint64_t exact_exclusive() {
    std::uint64_t credits = 0;
    for (std::size_t slot = 0, used = thread_slots_in_use(); slot < used; ++slot)
      credits += credit_[slot].bytes.exchange(0, std::memory_order_relaxed);
    if (credits != 0) store_shared(at_least() - credits);
    return at_least();
  }

  // Beside other changes. Where threads share slots, a slot's credit is no thread's own:
  // then straight to the shared word.
  void add_beside(std::uint64_t bytes) {
    if (thread_slots_shared()) [[unlikely]] {
      shared_.fetch_add(bytes);
      return;
    }
    std::atomic<std::uint64_t>& credit = credit_[thread_slot()].bytes;
    std::uint64_t left = credit.load(std::memory_order_relaxed);
    if (left < bytes) {
      const std::uint64_t taken = bytes - left > kChunk ? bytes - left : kChunk;
      shared_.fetch_add(taken);
      left += taken;
    }
    credit.store(left - bytes, std::memory_order_relaxed);
  }
  void remove_beside(std::uint64_t bytes) {
    if (thread_slots_shared()) [[unlikely]] {
      shared_.fetch_sub(bytes);
      return;
    }
    std::atomic<std::uint64_t>& credit = credit_[thread_slot()].bytes;
    std::uint64_t left = credit.load(std::memory_order_relaxed) + bytes;
    if (left > 2 * kChunk) {
      shared_.fetch_sub(left - kChunk);
      left = kChunk;
    }
    credit.store(left, std::memory_order_relaxed);
  }

 private:
  void store_shared(std::uint64_t bytes) { shared_.store(bytes, std::memory_order_relaxed); }

  struct alignas(64) Credit {
    std::atomic<std::uint64_t> bytes{0};
  };
  alignas(64) std::atomic<std::uint64_t> shared_{0};
  std::array<Credit, kThreadSlots> credit_{};
};

}  // namespace tristore
