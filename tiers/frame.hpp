#pragma once
// DRAM buffer frames (paper section 3, docs/design.md section 2). Two kinds share one 40-byte
// FrameHeader: a full frame (128-byte header interleaved with the 16 KiB page, LeanStore
// style) and a mini page (one 64-byte header line + 16 line slots = 1088 bytes). A frame is
// reached as FrameHeader* and told apart by its kind flag.
#include <emmintrin.h>

#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>

#include "common/optimistic_read_fence.hpp"
#include "common/spin_latch.hpp"
#include "common/types.hpp"
#include "tiers/line_mask.hpp"
#include "tiers/swip.hpp"

namespace tristore {

struct FullFrame;

namespace frame_flag {
inline constexpr std::uint8_t kMini = 1;         // a MiniPage, else a FullFrame
inline constexpr std::uint8_t kReferenced = 2;   // clock's second-chance bit
inline constexpr std::uint8_t kSwizzled = 4;     // the owning swip holds this frame's address
inline constexpr std::uint8_t kOwnerIsRoot = 8;  // owner.root_swip, not owner.parent
inline constexpr std::uint8_t kPromoted = 16;    // a mini page forwarding to `full`
inline constexpr std::uint8_t kReplaced = 32;    // a mini page replaced by a larger copy
inline constexpr std::uint8_t kRetired = 64;     // let go, back to the pool after readers left
// A full frame in the page table whose read from SSD, or copy from a page-grained NVM tier, is
// still under way (tiers/page_loads.cpp): readers and changes wait for it, nothing else touches
// it.
inline constexpr std::uint8_t kLoading = 128;
// A frame let go (promoted, replaced or retired): no longer the page's, left alone.
inline constexpr std::uint8_t kLetGo = kPromoted | kReplaced | kRetired;
}  // namespace frame_flag

struct FrameHeader {
  // Version-latch word (vmcache style): bits 0..55 version, bumped whenever the page changes
  // or leaves the frame; bit 63 the append latch: one thread at a time adds lines to the frame
  // while readers share the database latch (tiers/reader_misses.cpp); bits 56..62 the frame
  // latch of changes side by side (tiers/resident_writes.hpp): bit 62 one thread changing the
  // page, bit 61 a thread waiting to (no new shared holder then), bits 56..60 the threads
  // reading it under the latch. Readers beside changes read a
  // leaf optimistically instead: they take the word without bit 62 and validate against it.
  std::atomic<std::uint64_t> version{0};
  PageId page_id = kInvalidPageId;
  std::byte* nvm = nullptr;  // the NVM slot backing this page; null: not NVM-backed
  // Where the owning swip lives while kSwizzled: a full parent frame (+ swip_offset into its
  // data), or, with kOwnerIsRoot, a swip outside any page (a table's root).
  union Owner {
    FullFrame* parent;
    Swip* root_swip;
  } owner{nullptr};
  std::uint16_t swip_offset = 0;
  std::uint16_t fix_count = 0;
  std::uint16_t mini_dirty = 0;  // mini pages: one bit per slot
  // Atomic because readers holding the database latch shared (tiers/resident_reads.hpp) set
  // kReferenced side by side; every other change comes from an exclusive holder, so set and
  // clear need no locked instruction.
  std::atomic<std::uint8_t> flags{0};
  std::uint8_t mini_count = 0;  // mini pages: slots in use

  bool is_mini() const { return has(frame_flag::kMini); }
  bool has(std::uint8_t flag) const { return (flags.load(std::memory_order_relaxed) & flag) != 0; }
  void set(std::uint8_t flag) {
    flags.store(static_cast<std::uint8_t>(flags.load(std::memory_order_relaxed) | flag),
                std::memory_order_relaxed);
  }
  void clear(std::uint8_t flag) {
    flags.store(static_cast<std::uint8_t>(flags.load(std::memory_order_relaxed) & ~flag),
                std::memory_order_relaxed);
  }
  // The clock's second chance; safe among shared readers, and writes only when it changes.
  void mark_referenced() {
    if (!has(frame_flag::kReferenced))
      flags.fetch_or(frame_flag::kReferenced, std::memory_order_relaxed);
  }
  // A change by the exclusive latch's holder (the database's, or the frame's): nothing else
  // changes the word meanwhile.
  void bump_version() {
    version.store(version.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  // A frame let go while an appender may hold the append latch: keeps its bit.
  void bump_version_keeping_latch() { version.fetch_add(1, std::memory_order_release); }

  static constexpr std::uint64_t kAppendLatch = std::uint64_t{1} << 63;
  bool try_latch_appends() {
    return (version.fetch_or(kAppendLatch, std::memory_order_acquire) & kAppendLatch) == 0;
  }
  // Spins, then yields: the holder may be waiting for the core.
  void latch_appends() {
    for (unsigned spins = 0; !try_latch_appends();)
      while ((version.load(std::memory_order_relaxed) & kAppendLatch) != 0) spin_back_off(spins++);
  }
  void unlatch_appends() { version.fetch_and(~kAppendLatch, std::memory_order_release); }

  // The frame latch: taken with a compare-and-swap only from a word without the exclusive
  // bit, so the exclusive holder's bump_version (a plain store) loses nothing. A waiter for
  // exclusive raises bit 61, and no new shared holder comes in while it is up (as
  // common/shared_spin_latch.hpp's waiter): scans copying a hot leaf one after another would
  // otherwise keep the change waiting for as long as they go on.
  static constexpr std::uint64_t kLatchShared = std::uint64_t{1} << 56;
  static constexpr std::uint64_t kLatchSharedCount = std::uint64_t{31} << 56;
  static constexpr std::uint64_t kLatchExclusiveWaiting = std::uint64_t{1} << 61;
  static constexpr std::uint64_t kLatchSharedMask = kLatchSharedCount | kLatchExclusiveWaiting;
  static constexpr std::uint64_t kLatchExclusive = std::uint64_t{1} << 62;
  void latch_shared() {
    for (unsigned spins = 0;; spin_back_off(spins++)) {
      std::uint64_t word = version.load(std::memory_order_relaxed);
      if ((word & (kLatchExclusive | kLatchExclusiveWaiting)) != 0 ||
          (word & kLatchSharedCount) == kLatchSharedCount)
        continue;
      if (version.compare_exchange_weak(word, word + kLatchShared, std::memory_order_acquire,
                                        std::memory_order_relaxed))
        return;
    }
  }
  void unlatch_shared() { version.fetch_sub(kLatchShared, std::memory_order_release); }
  void latch_exclusive() {
    for (unsigned spins = 0; !try_latch_exclusive(); spin_back_off(spins++)) {
      std::uint64_t word = version.load(std::memory_order_relaxed);
      if ((word & (kLatchExclusive | kLatchExclusiveWaiting)) == 0 &&
          (word & kLatchSharedCount) != 0)
        version.compare_exchange_weak(word, word | kLatchExclusiveWaiting,
                                      std::memory_order_relaxed, std::memory_order_relaxed);
    }
  }
  // Once, without waiting: for a thread that may hold another frame's latch. It takes the
  // waiter bit down (another waiter raises it again).
  bool try_latch_exclusive() {
    std::uint64_t word = version.load(std::memory_order_relaxed);
    if ((word & (kLatchExclusive | kLatchSharedCount)) != 0 ||
        !version.compare_exchange_strong(word, (word & ~kLatchExclusiveWaiting) | kLatchExclusive,
                                         std::memory_order_acquire, std::memory_order_relaxed))
      return false;
    // The holder's writes stay after the bit (optimistic readers see the bit or miss them).
    optimistic_read_fence(std::memory_order_release);
    return true;
  }
  // Whether a thread holds the frame latch exclusively (a hint: it may be let go meanwhile).
  bool latched_exclusively() const {
    return (version.load(std::memory_order_relaxed) & kLatchExclusive) != 0;
  }
  // A plain store: while bit 62 is set nothing else writes the word (the latches compare and
  // swap only from a word without it; the append latch is taken only while no change runs).
  void unlatch_exclusive() {
    const std::uint64_t word = version.load(std::memory_order_relaxed);
    assert((word & kLatchExclusive) != 0);
    version.store(word & ~kLatchExclusive, std::memory_order_release);
  }

  // Optimistic reads (vmcache's shape): the word once no change is under way (the shared
  // holders left out), to compare with unchanged_since after the read. Every change of a page
  // bumps the version (BufferManager::mark_dirty) under the exclusive bit.
  std::uint64_t optimistic_version() const {
    for (unsigned spins = 0;; spin_back_off(spins++)) {
      const std::uint64_t word = version.load(std::memory_order_acquire);
      if ((word & kLatchExclusive) == 0) return word & ~kLatchSharedMask;
    }
  }
  // Whether no change began or ended since optimistic_version returned seen: then every byte
  // read in between is as one change left it.
  bool unchanged_since(std::uint64_t seen) const {
    optimistic_read_fence(std::memory_order_acquire);
    return (version.load(std::memory_order_relaxed) & ~kLatchSharedMask) == seen;
  }
};
static_assert(sizeof(FrameHeader) == 40);

struct alignas(64) FullFrame {
  FrameHeader header;
  std::uint16_t swizzled_children = 0;  // a frame with swizzled children is never evicted
  bool resident_all = false;            // whole-page flags: skip the masks
  bool dirty_all = false;
  // The write-back round (BufferManager::begin_write_back_round) in which the frame last went
  // from clean to dirty: a checkpoint beside changes writes back the frames dirty since an
  // earlier round. 0: older than any round.
  std::uint32_t dirty_round = 0;
  LineMask resident;
  LineMask dirty;
  alignas(64) std::byte data[kPageSize];

  // resident_all is read by readers beside the thread that sets it (tiers/resident_reads.hpp):
  // atomically, acquiring the lines the store released.
  bool all_resident() const {
    return std::atomic_ref<bool>(const_cast<bool&>(resident_all)).load(std::memory_order_acquire);
  }
  void mark_all_resident() {
    std::atomic_ref<bool>(resident_all).store(true, std::memory_order_release);
  }
  bool is_resident(std::size_t first_line, std::size_t last_line) const {
    if (all_resident()) return true;
    return first_line == last_line ? resident.test(first_line)
                                   : resident.all(first_line, last_line);
  }
};
static_assert(offsetof(FullFrame, data) <= 128, "full frame header must fit two cache lines");
static_assert(offsetof(FullFrame, dirty_round) + sizeof(std::uint32_t) <=
                  offsetof(FullFrame, resident),
              "the round fills the padding before the masks");
static_assert(sizeof(FullFrame) == 128 + kPageSize);

// Lines are kept in the order they were loaded, each read's lines in consecutive slots,
// ascending (find_run): a line appended never moves one already there, so readers beside the
// miss that appends it (tiers/resident_reads.hpp) read on. They read the count and the slots
// atomically; the appender writes a line's bytes and slot before the count that shows them.
struct alignas(64) MiniPage {
  static constexpr std::size_t kSlots = 16;
  FrameHeader header;
  FullFrame* full = nullptr;         // set once promoted: every access forwards there
  std::uint64_t slot_words[2] = {};  // slot -> line id, a byte each, over [0, count())
  alignas(64) std::byte data[kSlots * kCacheLineSize];

  std::size_t count() const {
    return std::atomic_ref<std::uint8_t>(const_cast<std::uint8_t&>(header.mini_count))
        .load(std::memory_order_acquire);
  }
  std::size_t line_at(std::size_t slot) const {
    return (word(slot / 8) >> (8 * (slot % 8))) & 0xff;
  }
  // The slot holding `line`, or kSlots: one 16-byte compare, no loop.
  std::size_t find(std::size_t line) const {
    const unsigned used = (1u << count()) - 1;  // first: the slots it shows are written
    const __m128i all =
        _mm_set_epi64x(static_cast<long long>(word(1)), static_cast<long long>(word(0)));
    const __m128i hits = _mm_cmpeq_epi8(all, _mm_set1_epi8(static_cast<char>(line)));
    const unsigned match = static_cast<unsigned>(_mm_movemask_epi8(hits)) & used;
    return match != 0 ? static_cast<std::size_t>(std::countr_zero(match)) : kSlots;
  }
  // The slot of `first` when lines [first, last] are all here in consecutive slots, else kSlots.
  std::size_t find_run(std::size_t first, std::size_t last) const {
    const std::size_t slot = find(first);
    if (slot + (last - first) >= count()) return kSlots;
    for (std::size_t k = 1; k <= last - first; ++k)
      if (line_at(slot + k) != first + k) return kSlots;
    return slot;
  }

  // For the one thread that changes the mini page.
  void set_line_at(std::size_t slot, std::size_t line) {
    const std::uint64_t shift = 8 * (slot % 8);
    const std::uint64_t value =
        (word(slot / 8) & ~(std::uint64_t{0xff} << shift)) | (std::uint64_t{line} << shift);
    std::atomic_ref<std::uint64_t>(slot_words[slot / 8]).store(value, std::memory_order_release);
  }
  void set_count(std::size_t count) {
    std::atomic_ref<std::uint8_t>(header.mini_count)
        .store(static_cast<std::uint8_t>(count), std::memory_order_release);
  }

 private:
  std::uint64_t word(std::size_t i) const {
    return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(slot_words[i]))
        .load(std::memory_order_relaxed);
  }
};
static_assert(offsetof(MiniPage, data) == 64, "mini page header must fit one cache line");
static_assert(sizeof(MiniPage) == 1088);

inline FullFrame* as_full(FrameHeader* frame) {
  assert(!frame->is_mini());
  return reinterpret_cast<FullFrame*>(frame);
}
inline MiniPage* as_mini(FrameHeader* frame) {
  assert(frame->is_mini());
  return reinterpret_cast<MiniPage*>(frame);
}

// The full frame that holds a frame's bytes: itself, or the one a promoted mini page forwards
// to; null for a mini page not promoted.
// Promotion publishes `full` to readers beside it: read atomically.
inline FullFrame* holding_full_frame(FrameHeader* frame) {
  if (!frame->is_mini()) [[likely]]
    return as_full(frame);
  return std::atomic_ref<FullFrame*>(as_mini(frame)->full).load(std::memory_order_acquire);
}

// The bytes [offset, offset + length) of a page where its frame holds them resident: in a
// full frame, the full frame a promoted mini page forwards to, or a run of a mini page's
// slots; null when a line is missing.
inline const std::byte* resident_bytes(FrameHeader* frame, std::uint32_t offset,
                                       std::uint32_t length) {
  const std::size_t first = offset / kCacheLineSize;
  const std::size_t last = (offset + length - 1) / kCacheLineSize;
  if (const FullFrame* full = holding_full_frame(frame))
    return full->is_resident(first, last) ? full->data + offset : nullptr;
  const MiniPage* mini = as_mini(frame);
  const std::size_t slot = mini->find_run(first, last);
  if (slot == MiniPage::kSlots) return nullptr;
  return mini->data + slot * kCacheLineSize + offset % kCacheLineSize;
}

// A full frame's bytes when every line is resident, else null (a mini page, or lines still
// missing). Guards test it once at the fix: a frame a guard holds only gains lines.
inline std::byte* data_if_whole(FrameHeader* frame) {
  if (frame->is_mini()) return nullptr;
  FullFrame* full = as_full(frame);
  return full->all_resident() ? full->data : nullptr;
}

}  // namespace tristore
