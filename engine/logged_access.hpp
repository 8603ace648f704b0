#pragma once
// Redo for the durable architectures: a PageAccess decorator (btree/page_access.hpp) over the
// buffer manager or nvm-direct, and the OperationLog that collects what one table operation
// changed (docs/durability.md).
//
// Within an operation, every guard that wrote keeps its page fixed until the operation ends;
// then one record holds the operation's redo, the pages get that record's LSN, and the fixes
// are released. So no page leaves DRAM before its redo is logged, and an operation is in the
// log whole or not at all. A leaf entry's change is logged as the B-tree's LeafChange (tuple
// level: the key and the changed value bytes); everything else a page gets (splits, merges, a
// new root) as the after-image of the byte ranges written. A transaction's table operation
// logs its undo in the same record (kTupleOperation): the key and the before-image, captured
// as the leaf changes, so an update walks the tree once. nvm-direct changes NVM in place: there
// each range's before-image is logged and persisted before the bytes are handed out, so
// restart can put back an operation the crash interrupted.
//
// No page logs more than its own size per operation (nvm-direct: plus at most one and a half
// pages of before-images), so max_operation_log_bytes bounds what an operation appends: the
// room TransactionManager::reserve() makes before it starts (no checkpoint runs inside it).
#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "btree/leaf_change.hpp"
#include "btree/node_layout.hpp"
#include "common/ignoring_racing_reads.hpp"
#include "common/page_format.hpp"
#include "common/structure_version.hpp"
#include "engine/log_record.hpp"
#include "engine/transaction_manager.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/frame.hpp"
#include "tiers/nvm_direct_access.hpp"
#include "tiers/nvm_direct_writes.hpp"
#include "tiers/resident_writes.hpp"

namespace tristore {

// A B-tree's height as last seen with this root page (an operation's log bound grows with it).
struct TreeHeight {
  PageId root = kInvalidPageId;
  std::uint32_t height = 0;
};

template <typename Inner>
class OperationLog {
 public:
  using InnerGuard = typename Inner::Guard;
  static constexpr bool kInPlace =
      std::is_same_v<Inner, NvmDirectAccess> || std::is_same_v<Inner, NvmDirectWrites>;

  // The smallest accepted log takes an operation on a tree of this height, with the margin
  // of one more level that BTreeTable reserves for its undo; a deeper tree on a small log gets
  // an Error from TransactionManager::reserve() instead.
  static constexpr std::uint32_t kGuaranteedTreeHeight = 2;
  // Live undo the smallest accepted log has room for besides such an operation.
  static constexpr std::uint64_t kGuaranteedUndoRoom = 8 * 1024;
  // nvm-direct: a page's range before-images per operation, past which it logs the whole page.
  static constexpr std::uint64_t kBeforeImageBudget = kPageSize / 2;

  // The most an operation on a B-tree of this height appends to the log. It writes at most
  // 2 * height + 2 pages (a split on every level and a new root; or a merge on every level),
  // each logged at most whole (build_payload), and frees fewer; nvm-direct adds at most a
  // half page and one whole page of before-images per page (before_image).
  // Beside them, its one leaf change: a key and a value with a small header, at most a
  // quarter page, as a leaf holds at least four entries (nvm-direct logs it as ranges). The
  // operation's undo, in the same record, is reserved apart (BTreeTable::changing).
  static constexpr std::uint64_t max_operation_log_bytes(std::uint32_t height) {
    const std::uint64_t pages = 2 * std::uint64_t{height} + 2;
    const std::uint64_t redo =
        pages * (2 * sizeof(RedoPageBytes) + kPageSize) + sizeof(RedoPageBytes) +
        sizeof(std::uint32_t) +
        (kInPlace ? 0 : sizeof(RedoPageBytes) + sizeof(LeafChange) + kPageSize / 4);
    const std::uint64_t images =
        kInPlace ? pages * (kBeforeImageBudget + log_record_size(sizeof(RedoPageBytes) + kPageSize))
                 : 0;
    return log_record_size(redo) + images;
  }

  // nvm-direct: the most the change of one leaf entry appends (no split or merge, as beside
  // others), its undo of undo_bytes in its record: its page's before-images, then at most the
  // page in after-images.
  static constexpr std::uint64_t max_in_place_leaf_change_log_bytes(std::uint64_t undo_bytes) {
    return kBeforeImageBudget + log_record_size(sizeof(RedoPageBytes) + kPageSize) +
           log_record_size(undo_bytes + sizeof(std::uint32_t) + sizeof(RedoPageBytes) + kPageSize);
  }

  // Error at open if the log cannot hold an operation on a tree of kGuaranteedTreeHeight.
  OperationLog(Inner& inner, TransactionManager& transactions, bool swizzled_swips)
      : inner_(&inner), transactions_(&transactions), swizzled_swips_(swizzled_swips) {
    transactions.require_log_room(max_operation_log_bytes(kGuaranteedTreeHeight + 1),
                                  kGuaranteedUndoRoom, "an operation on a B-tree of height 2");
  }
  // A log a thread keeps for its changes side by side (BTreeTable), bound to the operation's
  // access and database before each operation (the database's own log checked the room).
  OperationLog() = default;
  void bind(Inner& inner, TransactionManager& transactions, bool swizzled_swips) {
    assert(!active());
    inner_ = &inner;
    transactions_ = &transactions;
    swizzled_swips_ = swizzled_swips;
    beside_ = true;
  }

  Inner& inner() { return *inner_; }
  bool swizzled_swips() const { return swizzled_swips_; }
  TransactionManager& transactions() { return *transactions_; }
  bool active() const { return txn_ != nullptr; }
  // One per tree, shared by every table object over it (keyed by its root swip), so a bulk
  // load through one object reaches the others. The reference stays valid.
  TreeHeight& tree_height(const Swip* root) { return tree_heights_[root]; }
  // The tree's structure version, for its leaf splits beside changes (btree/btree.hpp), kept
  // the same way.
  StructureVersion& structure_version(const Swip* root) { return structure_versions_[root]; }

  // A leaf split beside changes logs its three pages, up to kLeafSplitBytes more than the
  // change of one entry that TransactionManager::room_beside counts each changer for: taken
  // before the split writes anything (false: no room, the split runs exclusively), given back
  // once the operation has ended. nvm-direct adds the parent's before-images (the leaf's are
  // in the changer's bound; the new page has none).
  static constexpr std::uint64_t kLeafSplitBytes =
      3 * (sizeof(RedoPageBytes) + kPageSize) + sizeof(RedoPageBytes) + kLogRecordAlignment +
      (kInPlace ? kBeforeImageBudget + log_record_size(sizeof(RedoPageBytes) + kPageSize) : 0);
  bool take_split_room() {
    assert(active() && !split_room_taken_);
    split_room_taken_ = transactions_->take_split_room_beside(kLeafSplitBytes);
    return split_room_taken_;
  }

  // max_log_bytes: the operation's bound (max_operation_log_bytes), checked in debug builds.
  // undo_table: the table whose operation this is, when the operation's leaf change is to be
  // logged with its undo (null: an undo step, or an operation that logs no undo).
  void begin(TransactionState& txn, std::uint32_t swips_offset, std::uint64_t max_log_bytes,
             UndoTarget* undo_table = nullptr) {
    txn_ = &txn;
    swips_offset_ = swips_offset;
    undo_table_ = undo_table;
    undo_txn_ = &txn;
#ifndef NDEBUG
    max_log_bytes_ = max_log_bytes;
    log_end_at_begin_ = transactions_->log()->end_lsn();
#else
    (void)max_log_bytes;
#endif
    transactions_->set_in_operation(true);
  }
  void note_dirty(PageId page, std::uint32_t offset, std::uint32_t length) {
    if (length == 0) return;
    note_touched(page);
    if (!ranges_.empty()) {
      const Range& last = ranges_.back();
      if (last.page == page && last.offset == offset && last.length == length) return;
    }
    ranges_.push_back({page, offset, length});
  }
  void keep(InnerGuard&& guard) { pinned_.push_back(std::move(guard)); }

  // A change of one leaf entry (BTree::change_leaf): its undo (key, before-image) is taken
  // from the page first; it is logged as the LeafChange itself unless the page already has
  // byte ranges in this operation (their after-images, read at the end, would hold the change
  // already) or changes in place (nvm-direct logs before-images of the bytes). Returns false
  // when the caller must apply it through the logging guard (as byte ranges).
  bool log_leaf_change(InnerGuard& guard, const LeafChange& change, const std::byte* key,
                       const std::byte* bytes) {
    // The operation's own change: its key is in the record's undo, not repeated.
    LeafChange logged = change;
    if (undo_table_ != nullptr && !undo_captured_) {
      capture_undo(guard, change, key);
      logged.flags |= kLeafKeyElsewhere;
    }
    const PageId page = guard.page_id();
    if (kInPlace ||
        std::any_of(ranges_.begin(), ranges_.end(), [&](const Range& r) { return r.page == page; }))
      return false;
    note_touched(page);
    const std::size_t at = leaf_bytes_.size();
    const std::uint64_t key_bytes = leaf_change_payload_size(logged) - change.bytes_size;
    const std::uint64_t size = sizeof(logged) + leaf_change_payload_size(logged);
    leaf_bytes_.resize(at + size);
    std::memcpy(leaf_bytes_.data() + at, &logged, sizeof(logged));
    std::memcpy(leaf_bytes_.data() + at + sizeof(logged), key, key_bytes);
    if (change.bytes_size > 0)
      std::memcpy(leaf_bytes_.data() + at + sizeof(logged) + key_bytes, bytes, change.bytes_size);
    leaf_changes_.push_back({page, at, static_cast<std::uint32_t>(size)});
    return true;
  }
  void note_root_change() { root_may_change_ = true; }
  bool root_may_change() const { return root_may_change_; }
  void note_root(std::uint32_t table_id, PageId root) {
    root_entry_ = true;
    root_table_ = table_id;
    root_page_ = root;
  }
  // A page allocated in this operation: logged as new (zeroed) plus the ranges written to it,
  // not whole; nvm-direct logs no before-image of it.
  void note_new_page(PageId page) {
    new_pages_.push_back(page);
    note_touched(page);
    if constexpr (kInPlace) imaged_whole_.push_back(page);
  }

  // A page the operation frees: its other fixes go, its ranges are not logged, and it is
  // freed only once the operation's record is durable (a crash before must find it intact).
  void free_later(InnerGuard&& guard) {
    const PageId page = guard.page_id();
    for (std::size_t i = 0; i < pinned_.size();) {
      if (pinned_[i].page_id() != page) {
        ++i;
        continue;
      }
      InnerGuard released = std::move(pinned_[i]);
      pinned_.erase(pinned_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    std::erase_if(ranges_, [&](const Range& r) { return r.page == page; });
    std::erase_if(leaf_changes_, [&](const LeafEntry& e) { return e.page == page; });
    std::erase(new_pages_, page);
    freed_.push_back(page);
    to_free_.push_back(std::move(guard));
  }

  // nvm-direct: logs and persists the bytes about to change, once per range and operation.
  // Past half a page of a page's ranges, the whole page instead, and nothing more of it.
  void before_image(InnerGuard& guard, std::uint32_t offset, std::uint32_t length) {
    if constexpr (kInPlace) {
      const PageId page = guard.page_id();
      if (length == 0 ||
          std::find(imaged_whole_.begin(), imaged_whole_.end(), page) != imaged_whole_.end())
        return;
      std::uint64_t& imaged = imaged_bytes(page);
      imaged += log_record_size(sizeof(RedoPageBytes) + length);
      if (imaged > kBeforeImageBudget) {
        offset = 0;
        length = kPageSize;
      }
      if (length == kPageSize) imaged_whole_.push_back(page);
      const RedoPageBytes header{page, offset, length};
      const Lsn lsn = transactions_->append_chained(
          *txn_, LogRecordType::kPageBeforeImage,
          {bytes_of(header), std::span(guard.read(offset, length), length)});
      transactions_->log()->persist_up_to(lsn);
      logged_before_images_ = true;
    }
  }

  // 1. One record: the operation's undo if it has one, then each page's leaf changes and the
  //    after-images of its ranges (swizzled swips as page ids). The undo becomes a step of
  //    the transaction.
  // 2. nvm-direct: durable before the pages carry its LSN (write-ahead rule in place).
  // 3. Each page gets the LSN; the fixes are released.
  void end() {
    TransactionState& txn = *std::exchange(txn_, nullptr);
    transactions_->set_in_operation(false);
    build_payload();
    if (payload_.empty() && !logged_before_images_ && !undo_captured_) return reset();
    Lsn lsn;
    if (undo_captured_) {
      assert(undo_txn_ == &txn);
      lsn = transactions_->append_chained(txn, LogRecordType::kTupleOperation,
                                          {std::span(undo_), std::span(payload_)});
      transactions_->note_undo(txn, *undo_table_, lsn, undo_);
      undo_captured_ = false;
    } else {
      lsn =
          transactions_->append_chained(txn, LogRecordType::kRedoOperation, {std::span(payload_)});
    }
    // The bound is the redo's; the undo in the same record is reserved apart.
    assert(beside_ || transactions_->log()->end_lsn() - log_end_at_begin_ <=
                          max_log_bytes_ + undo_.size() + kLogRecordAlignment);
    if (kInPlace || !to_free_.empty()) transactions_->log()->persist_up_to(lsn);
    for (InnerGuard& guard : pinned_)
      std::memcpy(guard.write(offsetof(PageHeader, lsn), sizeof(Lsn)), &lsn, sizeof(lsn));
    release_all(pinned_);
    for (InnerGuard& guard : to_free_) inner_->free_page(std::move(guard));
    reset();
  }
  // An operation that failed midway (an I/O error in a page it needed next). What it wrote
  // stays in its pages, which may be written back: so it is logged as end() logs it, its undo
  // with it, and the log holds what the pages hold (each step between two page reads leaves
  // the tree whole: a split done, a leaf entry changed, before the next fix). The
  // transaction's abort then puts the entry back, logged. Without that record, restart
  // neither redid nor undid it: a page written back kept a change no undo could reach, and a
  // later change of the page, logged by slot, was redone onto the page without it.
  // An operation that wrote nothing logs nothing (a page it allocated and wrote nothing to
  // is in no tree: restart gives it back); should logging fail too, the undo is kept
  // (not logged: a checkpoint copies it), so the abort puts the entry back (apply_undo works
  // whether or not the change was made).
  // nvm-direct: an operation that logged before-images ends with a record of its transaction,
  // so that restart leaves its pages as the run does (a crash right after may lose that
  // record: restart then puts the before-images back, which is as good).
  void abandon() {
    if (txn_ != nullptr && (!ranges_.empty() || !leaf_changes_.empty() || !freed_.empty())) {
      try {
        end();
        return;
      } catch (...) {
        // Already failing: the caller reports the first error.
      }
    }
    if (undo_captured_) transactions_->note_undo(*undo_txn_, *undo_table_, kNoLsn, undo_);
    if (TransactionState* txn = std::exchange(txn_, nullptr); txn != nullptr) {
      transactions_->set_in_operation(false);
      if (kInPlace && logged_before_images_) {
        try {
          transactions_->append_chained(*txn, LogRecordType::kRedoOperation, {});
        } catch (...) {
          // Already failing: the caller reports the first error.
        }
      }
    }
    reset();
  }

 private:
  struct Range {
    PageId page;
    std::uint32_t offset;
    std::uint32_t length;
  };
  struct LeafEntry {
    PageId page;
    std::size_t at;  // in leaf_bytes_: LeafChange + key + bytes
    std::uint32_t size;
  };

  void note_touched(PageId page) {
    if (std::find(touched_.begin(), touched_.end(), page) == touched_.end())
      touched_.push_back(page);
  }

  // The operation's undo, UndoLogical + key + before-image, read before the leaf changes.
  void capture_undo(InnerGuard& guard, const LeafChange& change, const std::byte* key) {
    const LeafGeometry leaf = LeafGeometry::of(change.key_size, change.value_size);
    UndoOperation operation = UndoOperation::kInsert;
    std::uint32_t before_offset = 0, before_size = 0;
    if (change.kind == LeafChangeKind::kRemove) {
      operation = UndoOperation::kRemove;
      before_offset = leaf.value_offset(change.index);
      before_size = change.value_size;
    } else if (change.kind == LeafChangeKind::kUpdate) {
      operation = UndoOperation::kUpdate;
      before_offset = leaf.value_offset(change.index) + change.part_offset;
      before_size = change.bytes_size;
    }
    const UndoLogical header{.table_id = undo_table_->table_id(),
                             .operation = operation,
                             .reserved = 0,
                             .key_size = change.key_size,
                             .before_size = before_size,
                             .reserved2 = change.part_offset};
    encode_undo(undo_, header, key,
                {before_size > 0 ? guard.read(before_offset, before_size) : nullptr, before_size});
    undo_captured_ = true;
  }

  // One at a time, outside the vector: releasing may throw (a crash test's simulated fence).
  static void release_all(std::vector<InnerGuard>& guards) {
    while (!guards.empty()) {
      InnerGuard released = std::move(guards.back());
      guards.pop_back();
    }
  }

  void reset() {
    release_all(pinned_);
    release_all(to_free_);
    ranges_.clear();
    leaf_changes_.clear();
    leaf_bytes_.clear();
    new_pages_.clear();
    touched_.clear();
    undo_table_ = nullptr;
    undo_captured_ = false;
    freed_.clear();
    imaged_whole_.clear();
    imaged_.clear();
    root_may_change_ = false;
    root_entry_ = false;
    logged_before_images_ = false;
    if (std::exchange(split_room_taken_, false))
      transactions_->give_back_split_room_beside(kLeafSplitBytes);
  }

  std::uint64_t& imaged_bytes(PageId page) {
    for (auto& [imaged_page, bytes] : imaged_)
      if (imaged_page == page) return bytes;
    return imaged_.emplace_back(page, 0).second;
  }

  InnerGuard* pinned_guard(PageId page) {
    for (InnerGuard& guard : pinned_)
      if (guard.page_id() == page) return &guard;
    return nullptr;
  }

  void add_entry(PageId page, std::uint32_t offset, std::uint32_t length, const void* bytes) {
    const RedoPageBytes entry{page, offset, length};
    const std::size_t at = payload_.size();
    payload_.resize(at + sizeof(entry) + length);
    std::memcpy(payload_.data() + at, &entry, sizeof(entry));
    if (length > 0) std::memcpy(payload_.data() + at + sizeof(entry), bytes, length);
  }

  // Page by page, in the order of their first change: the page's leaf changes (in order),
  // then its ranges merged where they overlap or nearly touch (the after-images are read now,
  // so order does not matter), or the whole page when the ranges would not be smaller. A page
  // has leaf changes only before its first range (log_leaf_change), so replaying the changes
  // and then writing the ranges gives the page as the operation left it.
  void build_payload() {
    payload_.clear();
    for (PageId page : freed_) add_entry(page, kRedoFreedEntry, 0, nullptr);
    for (const PageId page : touched_) {
      if (std::find(new_pages_.begin(), new_pages_.end(), page) != new_pages_.end())
        add_entry(page, kRedoNewPageEntry, 0, nullptr);
      for (const LeafEntry& entry : leaf_changes_)
        if (entry.page == page)
          add_entry(page, kRedoLeafEntry, entry.size, leaf_bytes_.data() + entry.at);
      InnerGuard* guard = pinned_guard(page);
      if (guard == nullptr) continue;  // freed
      if (!merge_ranges_of(page)) continue;
      if (ranges_bytes_ >= kPageSize) {
        add_page_entry(*guard, 0, kPageSize, guard->whole_page());
        continue;
      }
      for (const Range& range : page_ranges_)
        add_page_entry(*guard, range.offset, range.length, guard->read(range.offset, range.length));
    }
    if (root_entry_) add_entry(root_page_, kRedoRootEntry, sizeof(root_table_), &root_table_);
  }

  // page_ranges_ = the page's ranges by offset, merged, and ranges_bytes_ the bytes their
  // entries take; false when the page has none.
  bool merge_ranges_of(PageId page) {
    page_ranges_.clear();
    for (const Range& range : ranges_)
      if (range.page == page) page_ranges_.push_back(range);
    if (page_ranges_.empty()) return false;
    std::sort(page_ranges_.begin(), page_ranges_.end(),
              [](const Range& a, const Range& b) { return a.offset < b.offset; });
    std::size_t merged = 0;
    for (std::size_t i = 1; i < page_ranges_.size(); ++i) {
      Range& last = page_ranges_[merged];
      const Range& next = page_ranges_[i];
      // A gap smaller than an entry header costs less logged than a second entry.
      if (next.offset <= last.offset + last.length + sizeof(RedoPageBytes)) {
        last.length = std::max(last.offset + last.length, next.offset + next.length) - last.offset;
      } else {
        page_ranges_[++merged] = next;
      }
    }
    page_ranges_.resize(merged + 1);
    ranges_bytes_ = 0;
    for (const Range& range : page_ranges_) ranges_bytes_ += sizeof(RedoPageBytes) + range.length;
    return true;
  }

  // Beside changes, the parent of a leaf split beside them (ResidentWrites) has its swips
  // swizzled and unswizzled by other changes' misses while it is latched: its bytes are copied
  // racing with those stores, and each swip is then read again, whole (unswizzle_copy).
  static constexpr bool kSwipsRace = std::is_same_v<Inner, ResidentWrites>;
  void add_page_entry(InnerGuard& guard, std::uint32_t offset, std::uint32_t length,
                      const std::byte* bytes) {
    const std::size_t at = payload_.size() + sizeof(RedoPageBytes);
    {
      [[maybe_unused]] const IgnoringRacingReadsIf racing(kSwipsRace && swizzled_swips_);
      add_entry(guard.page_id(), offset, length, bytes);
    }
    if (swizzled_swips_) unswizzle_copy(guard, offset, length, payload_.data() + at);
  }

  // The log holds page ids where DRAM holds swizzled pointers (inner nodes' swip arrays).
  void unswizzle_copy(InnerGuard& guard, std::uint32_t offset, std::uint32_t length,
                      std::byte* copy) {
    if constexpr (std::is_same_v<Inner, BufferManager> || std::is_same_v<Inner, ResidentWrites>) {
      NodeHeader node;
      std::memcpy(&node, guard.read(kNodeHeaderOffset, sizeof(node)), sizeof(node));
      if (node.is_leaf) return;
      const std::uint64_t first = std::max<std::uint64_t>(offset, swips_offset_);
      const std::uint64_t last =
          std::min<std::uint64_t>(offset + length, swips_offset_ + (node.count + 1) * sizeof(Swip));
      for (std::uint64_t at = first; at + sizeof(Swip) <= last; at += sizeof(Swip)) {
        Swip swip;
        if constexpr (kSwipsRace)
          swip = Swip::load(*reinterpret_cast<const Swip*>(guard.read(at, sizeof(Swip))));
        else
          std::memcpy(&swip, copy + (at - offset), sizeof(swip));
        if (swip.is_swizzled() && swip.raw() != 0)
          swip = Swip::from_page_id(swip.frame<FrameHeader>()->page_id);
        std::memcpy(copy + (at - offset), &swip, sizeof(swip));
      }
    }
  }

  Inner* inner_ = nullptr;
  TransactionManager* transactions_ = nullptr;
  bool swizzled_swips_ = false;
  bool beside_ = false;  // other threads append meanwhile: the log's end says nothing of this one
  TransactionState* txn_ = nullptr;
  std::uint32_t swips_offset_ = 0;
  std::vector<InnerGuard> pinned_;
  std::vector<InnerGuard> to_free_;
  std::vector<Range> ranges_;
  std::vector<PageId> freed_;
  std::vector<PageId> imaged_whole_;
  std::vector<std::pair<PageId, std::uint64_t>> imaged_;  // nvm-direct: before-image bytes
  std::vector<LeafEntry> leaf_changes_;
  std::vector<std::byte> leaf_bytes_;
  std::vector<PageId> touched_;  // pages with ranges or leaf changes, by first change
  std::vector<PageId> new_pages_;
  std::vector<Range> page_ranges_;
  std::uint64_t ranges_bytes_ = 0;
  UndoTarget* undo_table_ = nullptr;
  TransactionState* undo_txn_ = nullptr;  // the operation's, until it ends or is abandoned
  std::vector<std::byte> undo_;
  bool undo_captured_ = false;
  std::vector<std::byte> payload_;
  std::unordered_map<const Swip*, TreeHeight> tree_heights_;
  std::unordered_map<const Swip*, StructureVersion> structure_versions_;
  bool split_room_taken_ = false;  // take_split_room, until the operation ends
  std::uint64_t max_log_bytes_ = 0;
  Lsn log_end_at_begin_ = kNoLsn;
  bool root_may_change_ = false;
  bool root_entry_ = false;
  std::uint32_t root_table_ = 0;
  PageId root_page_ = 0;
  bool logged_before_images_ = false;
};

template <typename Inner>
class LoggedAccess {
 public:
  using InnerGuard = typename Inner::Guard;

  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept
        : inner_(std::move(other.inner_)),
          log_(std::exchange(other.log_, nullptr)),
          wrote_(std::exchange(other.wrote_, false)) {}
    Guard& operator=(Guard&& other) noexcept(false) {
      if (this != &other) {
        release();
        inner_ = std::move(other.inner_);
        log_ = std::exchange(other.log_, nullptr);
        wrote_ = std::exchange(other.wrote_, false);
      }
      return *this;
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() noexcept(false) {
      // A guard that wrote nothing releases without logging and cannot throw: the lookup path
      // skips the uncaught_exceptions() call.
      if (!wrote_ || std::uncaught_exceptions() == 0) {
        release();
        return;
      }
      try {
        release();
      } catch (...) {
      }
    }

    PageId page_id() const { return inner_.page_id(); }
    const std::byte* read(std::uint32_t offset, std::uint32_t length) {
      return inner_.read(offset, length);
    }
    std::byte* write(std::uint32_t offset, std::uint32_t length) {
      if (log_->active()) {
        log_->before_image(inner_, offset, length);
        log_->note_dirty(inner_.page_id(), offset, length);
        wrote_ = true;
      }
      return inner_.write(offset, length);
    }
    std::byte* whole_page() {
      if (log_->active()) log_->before_image(inner_, 0, kPageSize);
      return inner_.whole_page();
    }
    // Nothing written, so nothing logged.
    void make_whole() requires requires(InnerGuard& inner) { inner.make_whole(); }
    { inner_.make_whole(); }
    // BTree::change_leaf: logged as the change itself where possible (OperationLog).
    void change_leaf(const LeafChange& change, const std::byte* key, const std::byte* bytes) {
      claim_leaf_change_writes(inner_, change);  // before its undo is taken
      if (log_->active() && log_->log_leaf_change(inner_, change, key, bytes)) {
        wrote_ = true;
        return apply_leaf_change(inner_, change, key, bytes);
      }
      apply_leaf_change(*this, change, key, bytes);
    }
    void mark_dirty(std::uint32_t offset, std::uint32_t length) {
      if (log_->active()) {
        log_->note_dirty(inner_.page_id(), offset, length);
        wrote_ = true;
      }
      inner_.mark_dirty(offset, length);
    }

   private:
    friend class LoggedAccess;
    Guard(InnerGuard&& inner, OperationLog<Inner>* log) : inner_(std::move(inner)), log_(log) {}
    void release() {
      if (log_ == nullptr) return;
      OperationLog<Inner>* log = std::exchange(log_, nullptr);
      if (std::exchange(wrote_, false) && log->active())
        log->keep(std::move(inner_));
      else
        inner_ = InnerGuard();
    }

    InnerGuard inner_;
    OperationLog<Inner>* log_ = nullptr;
    bool wrote_ = false;
  };

  explicit LoggedAccess(OperationLog<Inner>& log) : log_(log), inner_(log.inner()) {}

  Guard allocate_page() {
    Guard guard(inner_.allocate_page(), &log_);
    if (log_.active()) {
      log_.note_new_page(guard.page_id());
      guard.wrote_ = true;
    }
    return guard;
  }
  Guard fix(Swip& swip, Guard* parent) {
    return Guard(inner_.fix(swip, parent != nullptr ? &parent->inner_ : nullptr), &log_);
  }
  void move_swips(Guard& to, std::uint32_t offset, Guard* source_parent, Swip* swips,
                  std::uint32_t count) {
    const auto length = static_cast<std::uint32_t>(count * sizeof(Swip));
    if (log_.active()) {
      log_.before_image(to.inner_, offset, length);
      log_.note_dirty(to.page_id(), offset, length);
      to.wrote_ = true;
    }
    inner_.move_swips(to.inner_, offset,
                      source_parent != nullptr ? &source_parent->inner_ : nullptr, swips, count);
  }
  // Changes beside other threads (tiers/resident_writes.hpp): leaves latched, and no splits.
  void latch_leaf(Guard& leaf, bool for_change) requires requires(Inner& inner, InnerGuard& guard) {
    inner.latch_leaf(guard, for_change);
  }
  { inner_.latch_leaf(leaf.inner_, for_change); }
  void refuse_structure_change() requires requires(Inner& inner) {
    inner.refuse_structure_change();
  }
  { inner_.refuse_structure_change(); }
  // Leaf splits beside other threads (btree/btree.hpp, kSplitsBeside): the parent latched, the
  // log's room for the split taken (none: the split runs exclusively), the new leaf's swip
  // stored as the inner access serialises it.
  void latch_parent(Guard& parent) requires requires(Inner& inner, InnerGuard& guard) {
    inner.latch_parent(guard);
  }
  {
    if (log_.active() && !log_.take_split_room()) inner_.refuse_structure_change();
    inner_.latch_parent(parent.inner_);
  }
  void store_swip(Guard& node, std::uint32_t offset, Swip swip) requires
      requires(Inner& inner, InnerGuard& guard) {
    inner.store_swip(guard, offset, swip);
  }
  {
    if (log_.active()) {
      log_.note_dirty(node.page_id(), offset, sizeof(Swip));
      node.wrote_ = true;
    }
    inner_.store_swip(node.inner_, offset, swip);
  }
  void add_split_beside() requires requires(Inner& inner) { inner.add_split_beside(); }
  { inner_.add_split_beside(); }
  Swip swip_of(const Guard& guard) {
    log_.note_root_change();
    return inner_.swip_of(guard.inner_);
  }
  void free_page(Guard&& guard) {
    Guard dying = std::move(guard);
    dying.log_ = nullptr;
    dying.wrote_ = false;
    if (!log_.active()) return inner_.free_page(std::move(dying.inner_));
    log_.note_root_change();
    log_.free_later(std::move(dying.inner_));
  }

 private:
  OperationLog<Inner>& log_;
  Inner& inner_;
};

}  // namespace tristore
