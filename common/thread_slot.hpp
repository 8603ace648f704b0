#pragma once
// A small index per thread, for what is kept per thread in fixed arrays of cache-line-sized
// slots (the operation latch's readers and changers, the buffer manager's read counters). A
// thread takes the lowest free slot at its first call and gives it back when it ends, so a
// process that starts and ends many threads (a pool that grows and shrinks, a test suite)
// shares no slot while at most kThreadSlots threads live at once; beyond that, threads share
// slots, round robin, and keep sharing (thread_slots_shared). A slot given back may go to a
// thread that comes later: what a slot counts only ever moves forward.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

#include <pthread.h>

namespace tristore {

inline constexpr std::size_t kThreadSlots = 64;

namespace detail {
static_assert(kThreadSlots == 64, "the free slots are the bits of one word");
inline std::atomic<std::uint64_t> free_thread_slots{~std::uint64_t{0}};
inline std::atomic<std::size_t> thread_slots_given{0};  // slots [0, n) have had a thread
inline std::atomic<bool> thread_slots_overflowed{false};
inline std::atomic<std::size_t> shared_slots_given{0};
inline constexpr std::size_t kNoSlotYet = ~std::size_t{0};
// constinit: no guard for a dynamic initialisation on every call, only a load and a test.
inline constinit thread_local std::size_t this_threads_slot = kNoSlotYet;
// The slot goes back when the thread ends, in a POSIX thread-specific data destructor: those
// run after every C++ thread_local destructor of the thread, so a thread_local that uses the
// engine as it goes (a transaction it aborts) still finds its slot its own. A destructor of
// thread-specific data that calls thread_slot() later takes a slot again, and that goes back
// in the next round of destructors.
inline void give_back_this_threads_slot(void* slot_plus_one) {
  const auto slot = reinterpret_cast<std::uintptr_t>(slot_plus_one) - 1;
  this_threads_slot = kNoSlotYet;
  free_thread_slots.fetch_or(std::uint64_t{1} << slot, std::memory_order_seq_cst);
}
// The key, made once; none where the process has used up its keys: then slots are kept for
// good, which only brings the overflow below nearer.
struct ThreadSlotReturnKey {
  pthread_key_t key{};
  bool made = pthread_key_create(&key, give_back_this_threads_slot) == 0;
};
inline void give_back_at_thread_end(std::size_t slot) {
  static const ThreadSlotReturnKey return_key;
  if (return_key.made)
    pthread_setspecific(return_key.key, reinterpret_cast<void*>(std::uintptr_t{slot} + 1));
}
[[gnu::noinline]] inline std::size_t give_this_thread_a_slot() {
  std::uint64_t free = free_thread_slots.load(std::memory_order_seq_cst);
  while (free != 0) {
    const auto slot = static_cast<std::size_t>(std::countr_zero(free));
    if (!free_thread_slots.compare_exchange_weak(free, free & ~(std::uint64_t{1} << slot),
                                                 std::memory_order_seq_cst))
      continue;
    give_back_at_thread_end(slot);
    for (std::size_t given = thread_slots_given.load(std::memory_order_seq_cst);
         given <= slot &&
         !thread_slots_given.compare_exchange_weak(given, slot + 1, std::memory_order_seq_cst);) {
    }
    return this_threads_slot = slot;
  }
  thread_slots_overflowed.store(true, std::memory_order_seq_cst);
  thread_slots_given.store(kThreadSlots, std::memory_order_seq_cst);
  return this_threads_slot =
             shared_slots_given.fetch_add(1, std::memory_order_relaxed) % kThreadSlots;
}
}  // namespace detail

inline std::size_t thread_slot() {
  const std::size_t slot = detail::this_threads_slot;
  if (slot != detail::kNoSlotYet) [[likely]]
    return slot;
  return detail::give_this_thread_a_slot();
}

// Slots [0, thread_slots_in_use()) are every slot a thread has had so far (sequentially
// consistent: a thread whose first thread_slot() comes after this call, in a slot not had
// before, is not counted).
inline std::size_t thread_slots_in_use() {
  return detail::thread_slots_given.load(std::memory_order_seq_cst);
}

// Adds n to a counter kept in the calling thread's slot: only that thread adds to it, so a
// plain load and store (no locked instruction); others read it relaxed to sum the slots. Two
// threads sharing a slot may lose a count, never more.
inline void add_in_own_slot(std::atomic<std::uint64_t>& counter, std::uint64_t n) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Whether some slot may have more than one thread at once (more than kThreadSlots threads
// lived at once, at some time).
inline bool thread_slots_shared() {
  return detail::thread_slots_overflowed.load(std::memory_order_acquire);
}

}  // namespace tristore
