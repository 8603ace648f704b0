#pragma once
// The latch that lets many threads share one Database (docs/design.md section 8), in three
// modes:
//   - shared: an operation that writes nothing shared (a read outside any transaction, on a
//     path already in DRAM);
//   - changes: operations in transactions that read or change single leaf entries of pages
//     already in DRAM, side by side, each latching the frames it touches
//     (tiers/resident_writes.hpp) and taking row locks;
//   - exclusive: every other operation (and one of the above that finds it needs more).
// Shared holders and changers exclude each other; the exclusive holder excludes both.
//
// Readers must not share a written cache line, or two cores reading the same table would
// spend their time passing that line back and forth. So each thread announces itself in its
// own slot (by a per-thread index), and a writer raises its flag and then waits for every
// slot to drain. A reader that finds the flag raised, or changers inside, steps back and
// waits, so writers are not starved; changers let a reader that waits go first, so readers
// are not starved either. Changers announce themselves in slots of their own the same way
// (one word they all wrote was a line that two cores changing rows side by side passed back
// and forth twice per change): a reader or writer that waits for them looks at every slot,
// and the count of changers inside is a sum over the slots. Every side waits as
// common/spin_latch.hpp says: spin for a short section's length, then yield (on an
// oversubscribed machine the holder may be waiting for the core).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

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

  // A thread already holding the latch shared or exclusive (a scan's visit function reading
  // the database) holds it once more, in the mode it has.
  void lock_shared() {
    if (held_latch == this) {
      if (held_mode == Mode::kChanges) refuse_inside_changes();
      ++held_depth;
      return;
    }
    for (bool waiting = false;;) {
      readers_.enter();
      if (!writer_.load(std::memory_order_seq_cst) && !changers_.any_inside()) [[likely]] {
        if (waiting) readers_waiting_.fetch_sub(1, std::memory_order_relaxed);
        hold(this, Mode::kShared);
        return;
      }
      readers_.leave();
      if (changers_.any_inside()) lately_seen = {id_, kLately};
      if (!std::exchange(waiting, true)) readers_waiting_.fetch_add(1, std::memory_order_relaxed);
      for (unsigned spins = 0; writer_.load(std::memory_order_acquire) || changers_.any_inside();
           ++spins)
        spin_back_off(spins);
    }
  }
  void unlock_shared() {
    if (--held_depth > 0) return;
    hold(nullptr, Mode::kShared);
    readers_.leave();
  }

  // Changes side by side (or reads among them); never nested.
  void lock_changes(Purpose purpose = Purpose::kChange) {
    if (held_latch == this || (purpose == Purpose::kChange && visiting_latch == this)) [[unlikely]]
      refuse_nested_change();
    for (;;) {
      for (unsigned spins = 0; writer_.load(std::memory_order_acquire) ||
                               readers_waiting_.load(std::memory_order_relaxed) != 0;
           ++spins)
        spin_back_off(spins);
      changers_.enter();
      if (!writer_.load(std::memory_order_seq_cst)) [[likely]]
        break;
      changers_.leave();
    }
    // Readers that take a slot after this one's see it before they read anything.
    readers_.wait_until_empty();
    hold(this, Mode::kChanges);
  }
  // Whether this thread holds the latch (in any mode).
  bool held_here() const { return held_latch == this; }
  // Whether this thread holds it exclusive: nothing else runs on the database.
  bool exclusive_here() const { return held_latch == this && held_mode == Mode::kExclusive; }
  // Whether this thread is inside no call on the database: it holds no latch and runs no
  // scan's visit function.
  bool free_here() const { return held_latch != this && visiting_latch != this; }
  // Whether this thread has had the database to itself for its last kAloneAfter questions
  // (the first question on a latch has nothing to compare with):
  // no other thread has entered meanwhile, in any mode, and none is inside or waiting. Then an
  // operation may as well hold the latch exclusive, which costs one thread less than changes
  // mode's latches do, and keeps nobody waiting. (Threads that work side by side enter every
  // few operations of each other, and keep changing side by side.) A hint: a thread that
  // comes now waits for one operation, and its coming (its reader or changer slot, or
  // mark_entered for the exclusive latch) makes the next answer false. (Another thread that
  // was the last to enter exclusive and enters exclusive again between two questions goes
  // unseen: the answer is a hint, and that thread's next operation ends it.)
  // Once another thread was seen inside or waiting, the next kNotAloneFor questions are
  // answered no without looking: their slots are lines those threads write at every
  // operation, and a look at every question passed them between the cores.
  static constexpr unsigned kAloneAfter = 64;
  static constexpr unsigned kNotAloneFor = 64;
  bool alone_here() const {
    if (alone_seen.latch == id_ && alone_seen.not_alone_for != 0) [[likely]] {
      --alone_seen.not_alone_for;
      return false;
    }
    // Another thread inside or waiting: not alone, and nothing to compare with next time.
    if (changers_.any_inside() || writer_.load(std::memory_order_relaxed) ||
        readers_waiting_.load(std::memory_order_relaxed) != 0) {
      alone_seen = {id_, 0, 0, 0, kNotAloneFor};
      return false;
    }
    const std::uint64_t activity = readers_.others_activity() + changers_.others_activity();
    const std::uint32_t last = last_entered_.load(std::memory_order_relaxed);
    const bool nobody_else = alone_seen.latch == id_ && alone_seen.activity == activity &&
                             (last == thread_slot() + 1 || last == alone_seen.last_entered);
    alone_seen = {id_, activity, last, nobody_else ? alone_seen.questions + 1 : 0, 0};
    return alone_seen.questions >= kAloneAfter;
  }
  // Whether changes run now (a hint: they may end or begin at once), and how many.
  bool changes_inside() const { return changers_.any_inside(); }
  // Whether a read outside transactions should hold the latch for changes, beside them,
  // rather than shared: held shared, it would keep changers waiting and wait for them, and
  // where changes come every few operations (YCSB-RW) threads that chose by changes_inside
  // each time took turns between the two modes. So the answer holds for kLately questions:
  // yes once changers were seen inside (here, or by a shared hold that had to wait for them),
  // no once none were. The others' slots are looked at once per kLately questions, not at
  // every read.
  static constexpr int kLately = 64;
  bool changes_lately() const {
    if (lately_seen.latch == id_ && lately_seen.questions != 0) [[likely]] {
      if (lately_seen.questions > 0) {
        --lately_seen.questions;
        return true;
      }
      ++lately_seen.questions;
      return false;
    }
    const bool inside = changes_inside();
    lately_seen = {id_, inside ? kLately : -kLately};
    return inside;
  }
  std::uint32_t changers() const { return changers_.count_inside(); }
  // At least as many as changers() (the caller among them, if it is one), without reading
  // the others' slots, which they write at every change: one per slot a changer has entered,
  // unless threads share slots (then changers() itself).
  std::uint32_t changers_at_most() const {
    if (thread_slots_shared()) [[unlikely]]
      return changers();
    return static_cast<std::uint32_t>(changers_.slots_entered());
  }
  void unlock_changes() {
    hold(nullptr, Mode::kShared);
    changers_.leave();
  }

  void lock(Purpose purpose = Purpose::kChange) {
    if (purpose == Purpose::kChange && visiting_latch == this) [[unlikely]]
      refuse_nested_change();
    if (held_latch == this) [[unlikely]] {
      if (purpose == Purpose::kRead && held_mode == Mode::kExclusive) {
        ++held_depth;
        return;
      }
      if (purpose == Purpose::kChange || held_mode == Mode::kChanges) refuse_nested_change();
      fail(
          "this read cannot run inside a scan that holds the database shared (its visit "
          "function may read outside transactions only)");
    }
    mark_entered();
    // The flag is the writers' lock too: operations are short, so a writer spins (then
    // yields) rather than sleeping in the kernel, as a mutex would under contention.
    for (unsigned spins = 0; writer_.exchange(true, std::memory_order_seq_cst); ++spins)
      spin_back_off(spins);
    // Threads that take a reader or changer slot after this load see the flag
    // before they touch anything.
    readers_.wait_until_empty();
    changers_.wait_until_empty();
    hold(this, Mode::kExclusive);
  }
  void unlock() {
    if (--held_depth > 0) return;
    hold(nullptr, Mode::kShared);
    writer_.store(false, std::memory_order_release);
  }

  // The shared holders, for grace periods: memory they may be reading is reused only once
  // they have left (tiers/retired_frames.hpp).
  const ReaderSlots& readers() const { return readers_; }
  // The changers, each in its own slot, for grace periods beside changes: memory a change may
  // be reading is reused only once the changes inside when it was let go have left.
  const ReaderSlots& changer_slots() const { return changers_; }

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
  class [[nodiscard]] Changes {
   public:
    explicit Changes(OperationLatch& latch, Purpose purpose = Purpose::kChange) : latch_(latch) {
      latch_.lock_changes(purpose);
    }
    ~Changes() { latch_.unlock_changes(); }
    Changes(const Changes&) = delete;
    Changes& operator=(const Changes&) = delete;

   private:
    OperationLatch& latch_;
  };
  // A scan's visit function running while the scan holds no latch (it takes it leaf by leaf):
  // it may read, but a change from inside is refused as if the scan held the latch.
  class [[nodiscard]] Visiting {
   public:
    explicit Visiting(const OperationLatch& latch)
        : previous_(std::exchange(visiting_latch, &latch)) {}
    ~Visiting() { visiting_latch = previous_; }
    Visiting(const Visiting&) = delete;
    Visiting& operator=(const Visiting&) = delete;

   private:
    const OperationLatch* previous_;
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
  enum class Mode : std::uint8_t { kShared, kChanges, kExclusive };

  static void hold(const OperationLatch* latch, Mode mode) {
    held_latch = latch;
    held_depth = latch != nullptr ? 1 : 0;
    held_mode = mode;
  }
  // Who came last for the exclusive latch (a slot + 1), written only when it changes: for
  // alone_here, before the caller waits, so the holder's next question sees it.
  void mark_entered() {
    const auto me = static_cast<std::uint32_t>(thread_slot() + 1);
    if (last_entered_.load(std::memory_order_relaxed) != me)
      last_entered_.store(me, std::memory_order_relaxed);
  }
  [[noreturn]] static void refuse_nested_change() {
    fail(
        "the database cannot be changed from inside another call on the same thread (a "
        "scan's visit function may only read)");
  }
  [[noreturn]] static void refuse_inside_changes() {
    fail("a read cannot run inside a change on the same thread");
  }

  // The latch this thread holds, and how many times (nested reads), and in which mode.
  static inline thread_local const OperationLatch* held_latch = nullptr;
  static inline thread_local unsigned held_depth = 0;
  static inline thread_local Mode held_mode = Mode::kShared;
  // The latch whose scan's visit function this thread runs (Visiting).
  static inline thread_local const OperationLatch* visiting_latch = nullptr;
  // What this thread's last alone_here saw of the others.
  struct AloneSeen {
    std::uint64_t latch;  // its id_ (a new latch may take a closed one's address)
    std::uint64_t activity;
    std::uint32_t last_entered;
    unsigned questions;      // answered alone in a row
    unsigned not_alone_for;  // questions left answered no without looking
  };
  static inline thread_local AloneSeen alone_seen{0, 0, 0, 0, 0};
  // Questions left for which changes_lately says yes (> 0) or no (< 0) without looking.
  struct LatelySeen {
    std::uint64_t latch;  // its id_
    int questions;
  };
  static inline thread_local LatelySeen lately_seen{0, 0};
  static inline std::atomic<std::uint64_t> latches_made{0};
  const std::uint64_t id_ = latches_made.fetch_add(1, std::memory_order_relaxed) + 1;
  ReaderSlots readers_;
  ReaderSlots changers_;
  alignas(64) std::atomic<bool> writer_{false};
  alignas(64) std::atomic<std::uint32_t> last_entered_{0};
  alignas(64) std::atomic<std::uint32_t> readers_waiting_{0};
};

}  // namespace tristore
