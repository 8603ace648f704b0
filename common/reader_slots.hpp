#pragma once
// Who is reading right now, one cache line per thread (common/thread_slot.hpp), so that
// readers on two cores share no written line. Two users:
//   - the operation latch (engine/operation_latch.hpp): a writer waits until no slot holds a
//     reader;
//   - grace periods (tiers/retired_frames.hpp): memory that readers may still be looking at is
//     reused only once every reader that was inside when it was unlinked has left.
// A slot's word counts the readers inside (low bits) and the exits so far (high bits): a slot
// whose exits moved on has seen its reader leave, even if the thread has entered again since.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/spin_latch.hpp"
#include "common/thread_slot.hpp"

namespace tristore {

class ReaderSlots {
 public:
  ReaderSlots() = default;
  ReaderSlots(const ReaderSlots&) = delete;
  ReaderSlots& operator=(const ReaderSlots&) = delete;

  // enter() is sequentially consistent: a writer or a grace period that looks after it sees
  // the reader, and the reader sees what was unlinked before the look.
  void enter() {
    const std::size_t slot = thread_slot();
    if (slot >= slots_entered_.load(std::memory_order_relaxed)) [[unlikely]]
      note_entered(slot);
    slots_[slot].word.fetch_add(1, std::memory_order_seq_cst);
  }
  void leave() { slots_[thread_slot()].word.fetch_add(kExit - 1, std::memory_order_release); }

  // Whether any reader is inside (a writer waits for false, slot by slot).
  bool inside(std::size_t slot) const {
    return (slots_[slot].word.load(std::memory_order_seq_cst) & kCountMask) != 0;
  }
  // Slots [0, slots_entered()) are every slot a thread has entered so far (sequentially
  // consistent: a look at the slots after a thread entered sees its slot among them). Who
  // waits for the slots to drain looks no further: a latch whose changers never came looks
  // at no slot.
  std::size_t slots_entered() const { return slots_entered_.load(std::memory_order_seq_cst); }
  bool any_inside() const {
    const std::size_t slots = slots_entered();
    for (std::size_t i = 0; i < slots; ++i)
      if (inside(i)) return true;
    return false;
  }
  // Waits, slot by slot, until each slot has been seen empty (a writer that keeps new
  // readers out first: once so seen, none is inside).
  void wait_until_empty() const {
    const std::size_t slots = slots_entered();
    for (std::size_t i = 0; i < slots; ++i)
      for (unsigned spins = 0; inside(i); ++spins) spin_back_off(spins);
  }
  // How many are inside now (a hint: they may enter and leave meanwhile).
  std::uint32_t count_inside() const {
    const std::size_t slots = slots_entered();
    std::uint64_t count = 0;
    for (std::size_t i = 0; i < slots; ++i)
      count += slots_[i].word.load(std::memory_order_relaxed) & kCountMask;
    return static_cast<std::uint32_t>(count);
  }

  // A number that moves whenever a thread in another slot enters or leaves (each enter and
  // each leave adds to its slot's word); a slot this thread shares counts as another's.
  std::uint64_t others_activity() const {
    const std::size_t mine = thread_slot(), slots = thread_slots_in_use();
    std::uint64_t sum =
        thread_slots_shared() ? slots_[mine].word.load(std::memory_order_acquire) : 0;
    for (std::size_t i = 0; i < slots; ++i)
      if (i != mine) sum += slots_[i].word.load(std::memory_order_acquire);
    return sum;
  }

  // A picture of who is inside now, to tell later whether they have all left.
  struct Snapshot {
    std::array<std::uint64_t, kThreadSlots> words{};
    std::size_t slots = 0;
  };
  Snapshot snapshot() const {
    // A full barrier first (a locked instruction): what was unlinked before the picture must
    // be visible to every reader that enters after its slot was read.
    barrier_.fetch_add(1, std::memory_order_seq_cst);
    Snapshot picture;
    picture.slots = thread_slots_in_use();
    for (std::size_t i = 0; i < picture.slots; ++i)
      picture.words[i] = slots_[i].word.load(std::memory_order_seq_cst);
    return picture;
  }
  // True once every reader inside at `picture` has left. A slot that several threads share
  // (more than kThreadSlots threads) proves it only by being empty.
  bool left_since(const Snapshot& picture) const {
    for (std::size_t i = 0; i < picture.slots; ++i) {
      const std::uint64_t then = picture.words[i];
      if ((then & kCountMask) == 0) continue;
      const std::uint64_t now = slots_[i].word.load(std::memory_order_acquire);
      if ((now & kCountMask) == 0) continue;
      if ((now >> kExitShift) == (then >> kExitShift)) return false;
      // Exits moved: proof only while nobody shares the slot. Asked after the word is read: a
      // thread that came to share it raised the flag before it entered, and the word read
      // shows its entering or leaving, so the flag is seen (asked first, it could be missed).
      if (thread_slots_shared()) return false;
    }
    return true;
  }

 private:
  static constexpr unsigned kExitShift = 20;
  static constexpr std::uint64_t kExit = std::uint64_t{1} << kExitShift;
  static constexpr std::uint64_t kCountMask = kExit - 1;

  struct alignas(64) Slot {
    std::atomic<std::uint64_t> word{0};
  };
  // Raised before the slot's first entry (never lowered; threads rarely take new slots).
  void note_entered(std::size_t slot) {
    std::size_t entered = slots_entered_.load(std::memory_order_seq_cst);
    while (entered <= slot &&
           !slots_entered_.compare_exchange_weak(entered, slot + 1, std::memory_order_seq_cst)) {
    }
  }

  std::array<Slot, kThreadSlots> slots_;
  alignas(64) std::atomic<std::size_t> slots_entered_{0};
  alignas(64) mutable std::atomic<std::uint64_t> barrier_{0};
};

}  // namespace tristore
