// Thread slots (common/thread_slot.hpp): a thread that ends gives its slot back, so threads
// that come and go share none (grace periods prove a slot's reader left only by its exits while
// slots are not shared); only more than kThreadSlots threads alive at once share slots.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <set>
#include <thread>
#include <vector>

#include <pthread.h>

#include "common/thread_slot.hpp"

namespace tristore {
namespace {

std::size_t slot_of_a_new_thread() {
  std::size_t slot = 0;
  std::thread([&] { slot = thread_slot(); }).join();
  return slot;
}

bool slot_is_free(std::size_t slot) { return (detail::free_thread_slots.load() >> slot & 1) != 0; }

// What a thread's last destructors saw of its slot.
struct SeenAtThreadEnd {
  std::size_t slot = kThreadSlots;
  bool free = true;
};
SeenAtThreadEnd seen_by_thread_local, seen_by_key;

// A thread_local whose destructor uses the engine (as one holding a transaction it aborts),
// made before the thread's first thread_slot(): so it is destroyed after whatever that call
// registered with the C++ runtime.
struct UsesItsSlotAtThreadEnd {
  ~UsesItsSlotAtThreadEnd() {
    seen_by_thread_local.slot = thread_slot();
    seen_by_thread_local.free = slot_is_free(seen_by_thread_local.slot);
  }
};
void use_slot_in_key_destructor(void*) {
  seen_by_key.slot = thread_slot();
  seen_by_key.free = slot_is_free(seen_by_key.slot);
}

// Runs first (the test below counts slots from the start of the process).
TEST(CommonThreadSlot, ThreadEndDestructorsStillOwnTheirSlotsWhichGoBackAfterThem) {
  ASSERT_EQ(thread_slot(), 0u) << "the main thread, the first here";
  pthread_key_t key{};
  ASSERT_EQ(pthread_key_create(&key, use_slot_in_key_destructor), 0);
  std::size_t had = kThreadSlots;
  std::thread([&] {
    thread_local UsesItsSlotAtThreadEnd made_first;  // made here, not at the thread's start
    had = thread_slot();
    pthread_setspecific(key, &had);
  }).join();
  EXPECT_EQ(had, 1u);
  EXPECT_EQ(seen_by_thread_local.slot, had) << "a thread_local's destructor keeps the slot";
  EXPECT_FALSE(seen_by_thread_local.free) << "the slot was given back before the thread ended";
  EXPECT_LT(seen_by_key.slot, kThreadSlots);
  EXPECT_FALSE(seen_by_key.free) << "a slot used by a key's destructor must be taken";
  EXPECT_TRUE(slot_is_free(had) && slot_is_free(seen_by_key.slot)) << "both go back at the end";
  EXPECT_EQ(slot_of_a_new_thread(), had) << "the lowest free slot again";
  pthread_key_delete(key);
}

// One test, in order: the overflow at its end is for the rest of the process.
TEST(CommonThreadSlot, EndedThreadsGiveTheirSlotsBackAndOnlyTooManyAliveShareOne) {
  const std::size_t mine = thread_slot();
  // 1. Threads one after another, three times the slots: each takes the lowest free slot,
  //    the one the thread before gave back.
  const std::size_t first = slot_of_a_new_thread();
  ASSERT_EQ(mine, 0u) << "the main thread, the first here";
  ASSERT_EQ(first, 1u);
  for (std::size_t i = 0; i < 3 * kThreadSlots; ++i)
    ASSERT_EQ(slot_of_a_new_thread(), first) << "thread " << i;
  EXPECT_FALSE(thread_slots_shared());
  EXPECT_LE(thread_slots_in_use(), first + 1);
  // 2. Threads alive at once, as many as the slots left: each a slot of its own.
  std::atomic<bool> go{false};
  std::atomic<std::size_t> ready{0};
  std::vector<std::size_t> slots(kThreadSlots);  // the main thread's is taken: one more than fits
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i + 1 < slots.size(); ++i)
    threads.emplace_back([&, i] {
      slots[i] = thread_slot();
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
    });
  while (ready.load() + 1 < slots.size()) std::this_thread::yield();
  EXPECT_FALSE(thread_slots_shared()) << "every slot taken, none shared";
  EXPECT_EQ(thread_slots_in_use(), kThreadSlots);
  std::set<std::size_t> distinct(slots.begin(), slots.end() - 1);
  distinct.insert(mine);
  EXPECT_EQ(distinct.size(), slots.size()) << "no two threads alive share a slot";
  // 3. One more alive: it shares a slot, and from then on slots count as shared.
  slots.back() = slot_of_a_new_thread();
  EXPECT_LT(slots.back(), kThreadSlots);
  EXPECT_TRUE(thread_slots_shared());
  go.store(true);
  for (std::thread& thread : threads) thread.join();
}

}  // namespace
}  // namespace tristore
