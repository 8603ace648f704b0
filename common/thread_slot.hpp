#pragma once
// A small index per thread, for what is kept per thread in fixed arrays of cache-line-sized
// slots (the operation latch's readers, the buffer manager's read counters): threads beyond
// kThreadSlots share slots, round robin.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tristore {

inline constexpr std::size_t kThreadSlots = 64;

namespace detail {
inline std::atomic<std::size_t> threads_given_a_slot{0};
inline constexpr std::size_t kNoSlotYet = ~std::size_t{0};
// constinit: no guard for a dynamic initialisation on every call, only a load and a test.
inline constinit thread_local std::size_t this_threads_slot = kNoSlotYet;
[[gnu::noinline]] inline std::size_t give_this_thread_a_slot() {
  this_threads_slot = threads_given_a_slot.fetch_add(1, std::memory_order_seq_cst) % kThreadSlots;
  return this_threads_slot;
}
}  // namespace detail

inline std::size_t thread_slot() {
  const std::size_t slot = detail::this_threads_slot;
  if (slot != detail::kNoSlotYet) [[likely]]
    return slot;
  return detail::give_this_thread_a_slot();
}

// Slots [0, thread_slots_in_use()) are every slot a thread has had so far (sequentially
// consistent: a thread whose first thread_slot() comes after this call is not counted).
inline std::size_t thread_slots_in_use() {
  return std::min(detail::threads_given_a_slot.load(std::memory_order_seq_cst), kThreadSlots);
}

// Adds n to a counter kept in the calling thread's slot: only that thread adds to it, so a
// plain load and store (no locked instruction); others read it relaxed to sum the slots. Two
// threads sharing a slot may lose a count, never more.
inline void add_in_own_slot(std::atomic<std::uint64_t>& counter, std::uint64_t n) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Whether some slot has had more than one thread.
inline bool thread_slots_shared() {
  return detail::threads_given_a_slot.load(std::memory_order_acquire) > kThreadSlots;
}

}  // namespace tristore
