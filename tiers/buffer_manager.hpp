#pragma once
// The three-tier buffer manager (van Renen et al. 2018, sections 3-4; docs/design.md sections 2-3):
// a DRAM pool of full frames and mini pages over an NVM tier of page slots and an SSD page
// file. Pages are reached only through Guards; make_resident loads missing cache lines from NVM
// on demand; swips are swizzled into DRAM pointers so that a hot fix costs one branch.
//
// Page life cycle (paper Figure 6):
//   (1) SSD -> DRAM: whole page into a full frame, not NVM-backed.
//   (2) NVM -> DRAM: into a mini page (or an empty full frame), lines loaded on demand.
//   (3) DRAM eviction: clock over slabs of frames; NVM-backed pages write back dirty lines only.
//   (4) -> NVM: admitted (admission set hit, or NVM still has free slots).
//   (5) -> SSD: admission denied; written only if dirty, behind the evicting thread.
//   (6) NVM eviction: clock over slots; written to SSD only if dirty relative to SSD.
//
// Its definitions are split by concept: buffer_manager.cpp (construction, fixing pages,
// counters), line_loading.cpp (loads from NVM and SSD, mini pages, promotion), page_loads.cpp
// (whole-page reads from SSD or page-grained NVM in flight beside the miss latch),
// reader_misses.cpp, changer_misses.cpp, changer_splits.cpp, swizzling.cpp, dram_eviction.cpp,
// nvm_cache.cpp (admission, NVM eviction) and write_back.cpp (dirty lines and pages to NVM and SSD,
// checkpoints, close). The hot paths are inline below.
//
// One class runs every buffer-managed architecture (BufferManagerOptions):
//   3tier        nvm + ssd; cache_line_grained, mini_pages, swizzling switch off one by one
//   basic-nvm    nvm only: page-grained, page table, no swizzling; each page's slot is its home
//   ssd-bm       ssd only: page-grained, page table, no swizzling
// Without both tiers the three switches are forced off.
//
// Swizzling: one owning swip per page. Only a swip inside a full frame (whose bytes never
// move) or a root swip passed as fix(swip, nullptr) is swizzled; a root swip must stay at a
// stable DRAM address, and a mini page's children stay unswizzled until it is promoted. Call
// flush_all before destroying the manager: it unswizzles every swip, root swips included. Or
// write_back_all, which writes swizzled swips down as page ids but leaves them swizzled in DRAM:
// then no root swip may be used after the manager is gone.
//
// Threads: the database's operation latch (engine/operation_latch.hpp) serialises every call
// that changes pages. Reads outside transactions hold it shared and go through ResidentReads
// (tiers/resident_reads.hpp) beside each other: what is in DRAM they read without the buffer
// manager. Their misses are served here (tiers/reader_misses.cpp): lines that append to a
// page's frame beside each other (append_for_reader), anything else one miss at a time under
// the miss latch (fix_for_reader, read_for_reader), while the other readers go on; but a page
// read from SSD is read outside the miss latch, many at once, its frame in the page table
// meanwhile as an I/O-in-flight entry that other readers of the page wait for
// (tiers/page_loads.cpp), as is a page copied whole from a page-grained NVM tier. Nothing a
// reader may be looking at is changed or reused under it: lines are only added (a mini page
// keeps them in load order; one whose lines must be sorted is replaced by a sorted copy), and
// frames let go (evicted, replaced, promoted) go back to the pool only once the readers inside
// then have left (tiers/retired_frames.hpp). Changes beside each other (the latch in changes
// mode, tiers/resident_writes.hpp) load a page not in DRAM into a free frame under the miss
// latch too (tiers/changer_misses.cpp), evicting ahead as readers do (each victim latched
// first, without waiting; frames let go come back once the changes inside then have left),
// and checkpoints beside them pick each frame under it and write it back beside the misses,
// under its frame latch and the write-back latch (write_back_beside).
#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "common/byte_range.hpp"
#include "common/changes_beside_counts.hpp"
#include "common/counters.hpp"
#include "common/reader_slots.hpp"
#include "common/spin_latch.hpp"
#include "common/thread_slot.hpp"
#include "common/types.hpp"
#include "nvm/nvm_tier.hpp"
#include "ssd/ssd_page_file.hpp"
#include "tiers/admission_set.hpp"
#include "tiers/double_write_area.hpp"
#include "tiers/frame.hpp"
#include "tiers/frame_pool.hpp"
#include "tiers/page_id_map.hpp"
#include "tiers/retired_frames.hpp"
#include "tiers/swip.hpp"

namespace tristore {

struct BufferManagerOptions {
  std::uint64_t dram_bytes = 0;  // frames + mini pages, a hard limit
  NvmTier* nvm = nullptr;
  SsdPageFile* ssd = nullptr;
  bool cache_line_grained = true;
  bool mini_pages = true;
  bool swizzling = true;
  std::uint64_t admission_set_size = 0;  // 0: the number of NVM slots (tiers/admission_set.hpp)
  // While NVM has free slots, a page evicted from DRAM goes there without asking the admission
  // set: it saves an SSD write and fills NVM during warm-up; the set decides once NVM is full.
  bool admit_while_nvm_has_free_slots = true;
  // The write-ahead rule: called with the page's LSN before a DRAM page is written to NVM or
  // SSD (~Lsn{0} when line 0 is not resident); it must make the log durable up to there.
  std::function<void(Lsn)> before_write_back = {};
  // NVM pages evicted per round when NVM is full; their SSD writes share one sync, which must
  // come before their slots are freed. The freed slots are kept for the next pages the
  // admission set admits. 0: min(32, slots / 8), at least 1.
  std::uint32_t nvm_eviction_batch = 0;
  // Where pages are staged before they are written in place (NVM lines to their slot, pages
  // to SSD), so that a torn write can be mended at restart. Null: no staging (tests of the
  // tiers alone; a database always has one).
  DoubleWriteArea* double_write = nullptr;
};

// Admission detail beyond common/counters.hpp, to measure the free-slot policy.
struct AdmissionStats {
  std::uint64_t admitted_to_free_slot = 0;  // NVM had a free slot
  std::uint64_t admitted_from_set = 0;      // NVM full, the page was in the admission set
};

struct BufferMemoryUsage {
  std::uint64_t dram_bytes_used = 0;  // frames and mini pages in use
  std::uint64_t dram_budget_bytes = 0;
  std::uint64_t page_table_bytes = 0;  // apart from the budget
  std::uint64_t admission_set_bytes = 0;
  std::uint64_t nvm_slots_used = 0;
};

class BufferManager {
 public:
  class Guard;

  // Throws Error for a budget below a few frames or a missing tier. Opening over existing files
  // rebuilds the page table from the valid NVM slot headers.
  explicit BufferManager(const BufferManagerOptions& options);
  ~BufferManager() = default;
  BufferManager(const BufferManager&) = delete;
  BufferManager& operator=(const BufferManager&) = delete;

  // PageAccess (btree/page_access.hpp).
  Guard allocate_page();
  Guard fix(Swip& swip, Guard* parent);
  void move_swips(Guard& destination, std::uint32_t offset, Guard* source_parent, Swip* swips,
                  std::uint32_t count);
  Swip swip_of(const Guard& guard) const;
  void free_page(Guard&& guard);

  // Restart's redo: fixes a page by id without swizzling (Error when it exists nowhere), or
  // replaces its content with `image` wherever it lives (a torn or missing page included),
  // claiming its SSD page id. Only while no other guard refers to the page.
  Guard fix_page(PageId page_id);
  Guard install_page(PageId page_id, const std::byte* image);
  // Restart, after redo: pages in no tree lose what they still have (page table entry, DRAM
  // frame, NVM slot, SSD page). Returns how many had any. Only while no guard is held.
  std::uint64_t give_back_pages(std::span<const PageId> pages);

  // Writes every DRAM page down (children before parents) and syncs the SSD file, so a
  // BufferManager opened later over the same files finds every page. No guard may be held.
  void flush_all();
  // A checkpoint's write-back: every DRAM page's changes become durable in its home (its NVM
  // slot, else SSD) and the SSD file is synced, but nothing is evicted: residency, swizzled
  // swips and fixes stay as they are. Pages are only read, so fixed pages are fine; a guard
  // must not hold written bytes not yet marked dirty.
  // earlier_rounds_only: only the full frames dirty since before the current write-back round
  // (and every dirty mini page); what a checkpoint beside changes leaves to its exclusive end.
  // before_sync runs once the pages are written, before the SSD sync (which makes what it
  // writes into the SSD metadata durable with them).
  void write_back_all(bool earlier_rounds_only = false,
                      const std::function<void()>& before_sync = {});
  // A checkpoint beside changes (engine/transaction_manager.cpp), with the database latch in
  // changes mode: begin_write_back_round after the checkpoint's begin record (frames dirtied
  // from then on belong to the new round: their changes are logged after it), then
  // write_back_beside until it returns true, each call writing back up to `max_pages` of the
  // frames dirty since an earlier round, each under its frame latch and then the miss latch
  // (changes' misses take frames meanwhile), so the latch can be let go in between;
  // write_back_all(true) finishes. Frames that own swizzled swips are left to
  // write_back_all, which knows where the swips are.
  void begin_write_back_round();
  bool write_back_beside(std::size_t max_pages);
  // Forced replacement steps (tests, tools): false when nothing could be evicted.
  bool evict_one_dram_frame() { return evict_for(Need::kAnything); }
  bool evict_one_nvm_page() { return evict_nvm_pages(1) == 1; }
  // Up to `count` NVM pages to SSD (one sync), their slots freed; returns how many.
  std::size_t evict_nvm_pages(std::size_t count);

  // The buffer manager's own counters plus the NVM device's and the SSD file's.
  Counters counters() const;
  // Counters::reader_load_waits alone: safe to read beside readers (counters() is not).
  std::uint64_t reader_load_waits() const;
  const Counters& own_counters() const { return counters_; }
  const AdmissionStats& admission_stats() const { return admission_stats_; }
  BufferMemoryUsage memory_usage() const;
  const BufferManagerOptions& options() const { return options_; }

  // Where a page is now (tests and tools).
  enum class Location { kNowhere, kDramFull, kDramMini, kNvm, kSsd };
  Location location(PageId page_id) const;

  // Readers beside each other (tiers/resident_reads.hpp), holding the database latch shared.
  // The readers, whose leaving ends a grace period; null: no reader runs beside the manager.
  void share_with(const ReaderSlots* readers) { readers_ = readers; }
  // The changes beside each other (engine/operation_latch.hpp), each in a slot of its own, whose
  // leaving ends a grace period for frames let go beside them: then their misses evict ahead
  // (tiers/dram_eviction.cpp). Null: frames let go beside changes wait for a time no change
  // may be inside, and nothing is evicted beside changes.
  void change_beside(const ReaderSlots* changers) { changers_ = changers; }
  // The page's DRAM frame or null (nothing loaded, nothing counted).
  FrameHeader* frame_in_dram(PageId page_id) const {
    const std::optional<void*> entry = page_table_.find_racing(page_id);
    if (!entry || (nvm_ != nullptr && nvm_->in_slot_area(*entry))) return nullptr;
    auto* frame = static_cast<FrameHeader*>(*entry);
    // A racing lookup may pair the id with another page's frame (one that is not reused
    // while this reader is inside).
    return frame->page_id == page_id ? frame : nullptr;
  }
  // Misses, served one at a time. The frame `swip` leads to, loaded if need be and swizzled as
  // fix() would (parent: the frame the reader read the swip from; null for a root swip). And
  // the bytes of a page's lines, loaded if need be; `frame` becomes the page's frame that holds
  // them. The reader may hold frames let go meanwhile. Throws RetryExclusively when no frame
  // can be had without waiting for readers (the read runs again under the exclusive latch),
  // Error as fix() does.
  struct RetryExclusively {};
  FrameHeader* fix_for_reader(Swip& swip, FrameHeader* parent);
  // Lines missing from a page's DRAM frame, appended without the miss latch, beside other
  // such appends to other frames: null where the miss latch is needed (the lines do not
  // simply append, the frame has been let go, the NVM device charges read latency).
  const std::byte* append_for_reader(FrameHeader* frame, std::uint32_t offset,
                                     std::uint32_t length);
  // The same beside changes (tiers/resident_writes.hpp), where changers hold frame latches:
  // under the frame's exclusive latch instead of the append latch, taken without waiting
  // unless the caller holds it already (`latched`: its leaf, latched for its change). Null
  // where a reader's miss would be needed.
  const std::byte* append_beside_changes(FrameHeader* frame, std::uint32_t offset,
                                         std::uint32_t length, bool latched);
  // Before a reader waits for the miss latch: the page's NVM lines it is about to load are
  // fetched into the CPU cache meanwhile, so that readers missing side by side wait for memory
  // side by side, not in turn. A hint: a frame let go meanwhile fetches harmless bytes.
  static void prefetch_for_reader(const FrameHeader* frame, std::uint32_t offset,
                                  std::uint32_t length) {
    const std::byte* nvm = frame->nvm;
    if (nvm == nullptr) return;
    for (std::uint32_t line = offset / kCacheLineSize;
         line <= (offset + length - 1) / kCacheLineSize; ++line)
      __builtin_prefetch(nvm + std::size_t{line} * kCacheLineSize);
  }
  const std::byte* read_for_reader(FrameHeader*& frame, std::uint32_t offset, std::uint32_t length);
  // A change's miss beside other changes (tiers/changer_misses.cpp): the frame `swip` leads
  // to, loaded into a free frame if need be and swizzled as fix() would (parent: the frame the
  // changer read the swip from). Throws RetryExclusively when no frame is free (frames it
  // evicted ahead come back once the changes inside have left), Error as fix() does.
  FrameHeader* fix_beside_changes(Swip& swip, FrameHeader* parent);
  // Lines of a page's DRAM frame that do not simply append (a mini page to sort into a copy
  // or to promote), beside changes: the bytes and the frame that holds them now, or {bytes:
  // null} where the miss latch cannot serve them (the frame is latched by another or let go,
  // no frame is free). `latched`: the caller holds the frame's exclusive latch (its leaf,
  // for its change), which moves to the new frame if the page moves; else it is tried here.
  struct Served {
    const std::byte* bytes = nullptr;
    FrameHeader* frame = nullptr;
  };
  Served load_beside_changes(FrameHeader* frame, std::uint32_t offset, std::uint32_t length,
                             bool latched);
  // A leaf split beside changes (tiers/changer_splits.cpp): the new page in a free frame, latched
  // for the caller before the page table leads to it (RetryExclusively: no frame is free); the
  // parent's swips moved and the new page's swip stored in it a word at a time, where misses
  // swizzle, and evictions unswizzle, the parent's swips beside the split. `frame`: the
  // parent, a whole full frame the caller holds latched exclusively.
  FrameHeader* allocate_page_beside_changes();
  void move_swips_beside_changes(FrameHeader* frame, std::uint32_t offset, const Swip* swips,
                                 std::uint32_t count);
  void store_swip_beside_changes(FrameHeader* frame, std::uint32_t offset, Swip swip);
  void add_split_beside() { changes_beside_.add_split_beside(); }
  // Whether a fix through `swip` (held in parent_frame; null: a root swip) would swizzle it.
  bool would_swizzle(const Swip& swip, const FrameHeader* child, FrameHeader* parent_frame) const;
  void add_resident_reads(std::uint64_t swizzled_hits, std::uint64_t page_table_lookups,
                          std::uint64_t leaf_reads_retried = 0) {
    ThreadReads& mine = thread_reads_[thread_slot()];
    add_in_own_slot(mine.swizzled_hits, swizzled_hits);
    add_in_own_slot(mine.page_table_lookups, page_table_lookups);
    if (leaf_reads_retried != 0) add_in_own_slot(mine.leaf_reads_retried, leaf_reads_retried);
  }
  // An operation in a transaction served beside others (tiers/resident_writes.hpp), or run
  // again exclusively because it needed more; counted per thread.
  void add_change_beside(bool retried) { changes_beside_.add(retried); }
  void add_structure_retried() { changes_beside_.add_structure_retried(); }
  void add_undo_step_beside(bool retried) { changes_beside_.add_undo_step(retried); }
  // A change beside others (tiers/resident_writes.hpp) of resident lines, by the holder of the
  // frame's exclusive latch.
  void mark_written(FrameHeader* frame, std::uint32_t offset, std::uint32_t length) {
    mark_dirty(frame, offset, length);
  }

 private:
  friend class Guard;
  enum class Need { kAnything, kFullFrame };

  // Hot paths, inline below.
  std::byte* make_resident(FrameHeader* frame, std::uint32_t offset, std::uint32_t length);
  void mark_dirty(FrameHeader* frame, std::uint32_t offset, std::uint32_t length);
  std::byte* whole_page(FrameHeader* frame);
  void unfix(FrameHeader* frame) {
    --frame->fix_count;
    if (frame->has(frame_flag::kPromoted | frame_flag::kReplaced)) [[unlikely]]
      release_promoted(as_mini(frame));
  }
  Guard pin(FrameHeader* frame);

  // Cold paths, out of line (the .cpp files named at the top).
  Guard fix_through_table(Swip& swip, Guard* parent, bool may_swizzle = true);
  // A new page in a full frame, zeroed, resident and dirty, not yet in the page table.
  FullFrame* make_page();
  // A page a reader or a change reads whole, from SSD or from a page-grained NVM tier, outside
  // the miss latch (tiers/page_loads.cpp): its full frame sits in the page table marked
  // kLoading, fixed so that no eviction takes it, and threads that want the page meanwhile
  // wait for it rather than read it again.
  struct PageLoad {
    FullFrame* frame = nullptr;  // null: none; its `nvm`, if set, is the slot read from
    bool mine = false;           // this thread reads it; else it waits for the one that does
    std::exception_ptr error;    // the read's, thrown under the miss latch
  };
  // Step 1 of a fix: the page's DRAM frame, loaded from NVM or SSD if need be. Given `beside`
  // (a reader or a change, under the miss latch), a page to be read whole, or being read,
  // gives null and `beside` names the frame to read or to wait for.
  FrameHeader* find_or_load(PageId page_id, PageLoad* beside);
  // Under the miss latch; nvm_slot: the page's slot, or null to read it from SSD.
  FullFrame* begin_page_load(PageId page_id, std::byte* nvm_slot);
  void await_page_load(PageLoad& load);   // outside it: read, or wait for the thread that does
  void finish_page_load(PageLoad& load);  // under it: show the page, or throw the read's error
  // A page-grained tier's page from its NVM slot into `frame`, checked against the slot's
  // checksum once per open (Error naming the slot on a mismatch).
  void copy_nvm_page(FullFrame* frame);
  void claim_ssd_page(PageId page_id);
  Lsn write_back_lsn(FrameHeader* frame) const;
  // A frame for the page in NVM slot `slot`, nothing loaded yet (a cache-line-grained tier's
  // slot content checked).
  FrameHeader* frame_for_nvm_slot(PageId page_id, std::byte* slot, bool mini);
  FrameHeader* load_from_nvm(PageId page_id, std::byte* slot);
  FrameHeader* load_from_ssd(PageId page_id);
  std::byte* load_full_lines(FullFrame* frame, std::size_t first, std::size_t last);
  std::byte* make_resident_cold(FrameHeader* frame, std::uint32_t offset, std::uint32_t length);
  std::byte* make_resident_mini(MiniPage* mini, std::uint32_t offset, std::uint32_t length);
  MiniPage* replace_mini(MiniPage* mini);
  // The lines of `from` and lines [first, last] into `to` (`from` itself, or its copy),
  // ascending.
  void sort_lines_with(MiniPage* from, MiniPage* to, std::size_t first, std::size_t last);
  FullFrame* promote(MiniPage* mini);
  void release_promoted(MiniPage* mini);
  class ServingMiss;  // tiers/serving_miss.hpp
  // A frame made beside changes (a mini page's copy, its full frame) is latched by its maker
  // before anything leads to it: the change that moved there holds it.
  static void latch_made_beside_changes(FrameHeader& frame) {
    [[maybe_unused]] const bool latched = frame.try_latch_exclusive();
    assert(latched && "a new frame nobody can reach yet");
  }
  bool is_live(const FrameHeader* frame) const;
  // A frame let go: to the pool, or retired while readers may be beside the manager.
  void release_frame(FrameHeader* frame);
  std::size_t reclaim_retired();
  // parent_frame: the full frame holding `swip`, null for a root swip.
  void swizzle(Swip& swip, FrameHeader* child, FrameHeader* parent_frame);
  void unswizzle(FrameHeader* frame);
  FullFrame* allocate_full();
  MiniPage* allocate_mini();
  template <typename Frame, typename TryAllocate>
  Frame* allocate(Need need, TryAllocate&& try_allocate);
  void evict_ahead(Need need);
  bool evict_for(Need need);
  bool evictable(FrameHeader* frame) const;
  bool latch_victim(FrameHeader* frame);
  void unlatch_victim(FrameHeader* frame);
  void evict_latched(FrameHeader* frame);  // evict, then unlatch_victim (also on a throw)
  void evict(FrameHeader* frame);
  // A swizzled swip inside a full frame, as its child's header records it.
  struct SwizzledSwip {
    const FullFrame* parent;
    std::uint32_t offset;
    PageId child;
  };
  std::vector<SwizzledSwip> swizzled_swips_by_parent();
  // Lines [first_line, first_line + lines) of a full frame as a page must hold them on NVM or
  // SSD: from the frame, or copied to `scratch` (a page) with `swips` (of this frame) as ids.
  static const std::byte* unswizzled_lines(const FullFrame* frame, std::size_t first_line,
                                           std::size_t lines, std::span<const SwizzledSwip> swips,
                                           std::byte* scratch);
  bool persist_dirty_lines(FrameHeader* frame, std::span<const SwizzledSwip> swips,
                           std::byte* scratch);
  void write_back_to_nvm(FrameHeader* frame);
  void evict_unbacked(FullFrame* frame);
  // A page never NVM-backed into a free NVM slot (its header last); null if none is free.
  std::byte* admit_to_nvm(PageId page_id, const std::byte* page, bool dirty_vs_ssd);
  // A whole page to SSD, staged first, then queued: the SSD file's writer threads write it
  // (SsdPageFile::write_behind). And the SSD sync that waits for them and lets the staged
  // copies go.
  void write_to_ssd(PageId page_id, const std::byte* page);
  void sync_ssd();
  void sync_ssd_latched();  // the caller holds the write-back latch
  bool should_admit(PageId page_id);
  std::optional<SlotId> take_nvm_slot();
  Swip* owning_swip(FrameHeader* frame) const;

  BufferManagerOptions options_;
  NvmTier* nvm_;
  SsdPageFile* ssd_;
  NvmDevice* nvm_device_;
  bool cache_line_grained_;
  bool mini_pages_;
  bool swizzling_;

  FramePool pool_;
  // page id -> FrameHeader* or NVM slot, told apart by address; its capacity fixed, so readers
  // look it up beside the miss that changes it.
  PageIdMap<void*> page_table_;
  AdmissionSet admission_set_;
  std::vector<std::uint8_t> nvm_referenced_;  // NVM clock's second-chance bits, per slot
  std::size_t dram_hand_ = 0;
  SlotId nvm_hand_ = 0;
  // persist_dirty_lines: the lines of one write-back, their indices and where they come from
  // (under the write-back latch).
  std::array<std::uint8_t, kLinesPerPage> write_back_indices_{};
  std::array<const std::byte*, kLinesPerPage> write_back_lines_{};
  SlotId loading_slot_ = ~SlotId{0};  // the slot being loaded into DRAM: not an NVM victim
  std::size_t nvm_eviction_batch_ = 0;
  std::size_t nvm_reserved_slots_ = 0;  // free slots an eviction round left for admissions
  std::vector<SlotId> nvm_victims_;     // reused by evict_nvm_pages
  // Checkpoints beside changes: the round frames dirtied now belong to (FullFrame::dirty_round),
  // and the slab write_back_beside goes on from.
  std::atomic<std::uint32_t> write_back_round_{1};
  std::size_t write_back_cursor_ = 0;
  static constexpr std::size_t kSlabsPerBatch = 1024;  // looked at per write_back_beside call
  bool write_back_dirty(FrameHeader* frame, std::span<const SwizzledSwip> swips,
                        std::byte* scratch);
  // A checkpoint beside changes writes a frame back outside the miss latch, under the frame's
  // and the write-back latch alone, where that takes nothing misses share: its lines to the
  // page's own NVM slot, or the page to SSD where there is no NVM tier (a page that takes an
  // NVM slot now needs the miss latch).
  bool writes_back_beside_misses(const FrameHeader* frame) const {
    return nvm_ == nullptr || frame->is_mini() || frame->nvm != nullptr;
  }
  // One write-back at a time, beside the misses: it holds the double-write area, the write-back
  // lines above and the SSD syncs (persist_dirty_lines, write_to_ssd, sync_ssd). Taken inside
  // the miss latch where both are held; no frame latch is waited for while it is held.
  alignas(64) SpinLatch write_back_latch_;

  // Readers beside the manager (see Threads above). The miss latch has a cache line of its
  // own: appends beside it read the fields around it.
  const ReaderSlots* readers_ = nullptr;
  const ReaderSlots* changers_ = nullptr;
  // Lines are appended to frames beside others: in the cache-line-grained NVM tier only.
  bool appends_beside() const { return cache_line_grained_ && nvm_ != nullptr; }
  const std::byte* append_lines(FrameHeader* frame, std::uint32_t offset, std::uint32_t length);
  alignas(64) SpinLatch miss_latch_;
  alignas(64) bool sharing_ = false;  // a miss is served: readers may be beside it
  bool changing_ = false;             // a change's miss is served: changes may be beside it
  RetiredFrames retired_;

  Counters counters_;
  AdmissionStats admission_stats_;
  // Two threads sharing a slot (more than kThreadSlots threads) may lose a count, never more.
  struct alignas(64) ThreadReads {
    std::atomic<std::uint64_t> swizzled_hits{0};
    std::atomic<std::uint64_t> page_table_lookups{0};
    std::atomic<std::uint64_t> appends{0};
    std::atomic<std::uint64_t> leaf_reads_retried{0};  // optimistic tries a change spoilt
    std::atomic<std::uint64_t> load_waits{0};          // for another thread's read of a page
  };
  std::array<ThreadReads, kThreadSlots> thread_reads_;
  ChangesBesideCounts changes_beside_;
};

// A fixed page. Move-only; releasing (or destroying) it unfixes the page. Pointers returned
// by read/write/whole_page stay readable until the guard is released.
class BufferManager::Guard {
 public:
  Guard() = default;
  Guard(Guard&& other) noexcept
      : manager_(other.manager_),
        frame_(std::exchange(other.frame_, nullptr)),
        whole_(std::exchange(other.whole_, nullptr)) {}
  Guard& operator=(Guard&& other) noexcept {
    if (this != &other) {
      release();
      manager_ = other.manager_;
      frame_ = std::exchange(other.frame_, nullptr);
      whole_ = std::exchange(other.whole_, nullptr);
    }
    return *this;
  }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
  ~Guard() { release(); }

  explicit operator bool() const { return frame_ != nullptr; }
  PageId page_id() const { return frame_->page_id; }
  const std::byte* read(std::uint32_t offset, std::uint32_t length) {
    if (whole_ != nullptr) [[likely]]
      return whole_ + offset;
    return manager_->make_resident(frame_, offset, length);
  }
  std::byte* write(std::uint32_t offset, std::uint32_t length) {
    std::byte* bytes =
        whole_ != nullptr ? whole_ + offset : manager_->make_resident(frame_, offset, length);
    manager_->mark_dirty(frame_, offset, length);
    return bytes;
  }
  std::byte* whole_page() { return manager_->whole_page(frame_); }
  // Every line resident before a change begins (the B-tree's splits and merges): a load that
  // fails, its eviction's write-back failing, then changes nothing.
  void make_whole() { manager_->whole_page(frame_); }
  // The same for a leaf change (btree/leaf_change.hpp): each run it writes resident before its
  // first write, so that it never stops with its keys shifted and its values not.
  void claim_writes(std::span<const ByteRange> runs) {
    if (whole_ != nullptr) return;
    for (const ByteRange& run : runs) manager_->make_resident(frame_, run.offset, run.length);
  }
  void mark_dirty(std::uint32_t offset, std::uint32_t length) {
    manager_->mark_dirty(frame_, offset, length);
  }
  void release() {
    whole_ = nullptr;
    if (frame_ != nullptr) manager_->unfix(std::exchange(frame_, nullptr));
  }

  // Introspection for tests and benchmarks.
  bool on_mini_page() const { return frame_->is_mini() && !frame_->has(frame_flag::kPromoted); }

 private:
  friend class BufferManager;
  // A fixed frame is neither let go nor loses a resident line: a full frame found whole at
  // the fix reads without a mask test for the guard's life.
  Guard(BufferManager* manager, FrameHeader* frame)
      : manager_(manager), frame_(frame), whole_(data_if_whole(frame)) {}

  BufferManager* manager_ = nullptr;
  FrameHeader* frame_ = nullptr;
  std::byte* whole_ = nullptr;  // frame_'s data when it is a full frame, all lines resident
};

inline BufferManager::Guard BufferManager::pin(FrameHeader* frame) {
  ++frame->fix_count;
  frame->mark_referenced();
  return Guard(this, frame);
}

inline BufferManager::Guard BufferManager::fix(Swip& swip, Guard* parent) {
  if (swip.is_swizzled()) {
    ++counters_.swizzled_hits;
    return pin(swip.frame<FrameHeader>());
  }
  return fix_through_table(swip, parent);
}

// The hot path, forced inline: a full frame whose lines are resident costs one mask test.
// Loads and mini pages take the out-of-line make_resident_cold.
[[gnu::always_inline]] inline std::byte* BufferManager::make_resident(FrameHeader* frame,
                                                                      std::uint32_t offset,
                                                                      std::uint32_t length) {
  assert(length > 0 && offset + length <= kPageSize);
  if (!frame->is_mini()) [[likely]] {
    FullFrame* full = as_full(frame);
    if (full->is_resident(offset / kCacheLineSize, (offset + length - 1) / kCacheLineSize))
        [[likely]]
      return full->data + offset;
  }
  return make_resident_cold(frame, offset, length);
}

inline void BufferManager::mark_dirty(FrameHeader* frame, std::uint32_t offset,
                                      std::uint32_t length) {
  assert(length > 0 && offset + length <= kPageSize);
  const std::size_t first = offset / kCacheLineSize;
  const std::size_t last = (offset + length - 1) / kCacheLineSize;
  if (frame->is_mini()) [[unlikely]] {
    MiniPage* mini = as_mini(frame);
    if (mini->full != nullptr) {
      mark_dirty(&mini->full->header, offset, length);
      return;
    }
    const std::size_t slot = mini->find_run(first, last);
    assert(slot != MiniPage::kSlots && "mark_dirty of non-resident lines");
    const unsigned lines = (2u << (last - first)) - 1;
    frame->mini_dirty = static_cast<std::uint16_t>(frame->mini_dirty | (lines << slot));
  } else {
    FullFrame* full = as_full(frame);
    assert(full->is_resident(first, last) && "mark_dirty of non-resident lines");
    if (!full->dirty_all) {
      // Acquire: a frame that sees a new round is dirtied after the checkpoint record that
      // began it, so its change is logged after that record.
      if (full->dirty.none()) full->dirty_round = write_back_round_.load(std::memory_order_acquire);
      if (frame->nvm != nullptr && cache_line_grained_)
        full->dirty.set(first, last);
      else
        full->dirty_all = true;
    }
  }
  frame->bump_version();
}

inline std::byte* BufferManager::whole_page(FrameHeader* frame) {
  if (frame->is_mini()) [[unlikely]] {
    MiniPage* mini = as_mini(frame);
    frame = &(mini->full != nullptr ? mini->full : promote(mini))->header;
  }
  FullFrame* full = as_full(frame);
  if (full->all_resident()) [[likely]]
    return full->data;
  return load_full_lines(full, 0, kLinesPerPage - 1);
}

}  // namespace tristore
