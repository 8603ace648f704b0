#pragma once
// The one TableInterface implementation: a B+-tree over the database's page-access policy.
// Changing operations run as (parts of) transactions: a logical undo record first, then the
// tree change as one logged operation (engine/logged_access.hpp). main-memory keeps its undo
// in DRAM only.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <variant>
#include <vector>

#include "btree/btree.hpp"
#include "common/error.hpp"
#include "engine/database.hpp"
#include "engine/logged_access.hpp"
#include "engine/removed_rows.hpp"
#include "engine/table_interface.hpp"
#include "engine/transaction_manager.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/main_memory_access.hpp"
#include "tiers/main_memory_writes.hpp"
#include "tiers/nvm_direct_access.hpp"
#include "tiers/nvm_direct_writes.hpp"
#include "tiers/resident_reads.hpp"
#include "tiers/resident_writes.hpp"

namespace tristore {

template <TableKey K, TableValue V, typename Inner>
class BTreeTable final : public TableInterface<K, V> {
  static constexpr bool kLogged = !std::is_same_v<Inner, MainMemoryAccess>;
  using Access = std::conditional_t<kLogged, LoggedAccess<Inner>, MainMemoryAccess>;
  using AccessMember = std::conditional_t<kLogged, LoggedAccess<Inner>, MainMemoryAccess&>;
  using Context = std::conditional_t<kLogged, OperationLog<Inner>, MainMemoryAccess>;
  // Reads log nothing: they walk the tree over the inner access itself, without the logging
  // decorator's guards (the same root swip, so the same tree).
  using ReadAccess = std::conditional_t<kLogged, Inner, MainMemoryAccess>;
  // Reads and changes in transactions run beside each other through BesideAccess: on the
  // buffer manager (tiers/resident_writes.hpp), main-memory (tiers/main_memory_writes.hpp) and
  // nvm-direct (tiers/nvm_direct_writes.hpp).
  static constexpr bool kBufferManaged = std::is_same_v<Inner, BufferManager>;
  static constexpr bool kNvmDirect = std::is_same_v<Inner, NvmDirectAccess>;
  using BesideAccess =
      std::conditional_t<kBufferManaged, ResidentWrites,
                         std::conditional_t<kNvmDirect, NvmDirectWrites, MainMemoryWrites>>;

 public:
  using typename TableInterface<K, V>::Visit;
  using typename TableInterface<K, V>::Generate;

  BTreeTable(Context& context, TransactionManager& transactions, std::uint32_t table_id, Swip& root)
      : context_(context),
        transactions_(transactions),
        table_id_(table_id),
        root_(root),
        access_(context),
        tree_(access_, root),
        read_tree_(read_access(context), root),
        root_page_(root_page_id()) {
    if constexpr (kLogged) height_ = &context.tree_height(&root);
    structure_ = &context.structure_version(&root);
  }

  std::uint32_t table_id() const override { return table_id_; }

  // Reads in a transaction lock the row shared first; reads outside one fail on a row an open
  // transaction changed (engine/lock_manager.hpp), checked while the leaf is still held
  // (reading_row).
  bool get(TransactionState* txn, const K& key, V& out) override {
    return reading(
        txn, kRestartable,
        [&](auto& tree) {
          return reading_row(txn, key,
                             [&](const auto& on_read) { return tree.lookup(key, out, on_read); });
        },
        &key);
  }
  bool get_part(TransactionState* txn, const K& key, std::size_t offset, std::size_t length,
                void* out) override {
    check_part(offset, length);
    return reading(txn, kRestartable,
                   [&](auto& tree) {
                     return reading_row(txn, key, [&](const auto& on_read) {
                       return tree.lookup_part(key, static_cast<std::uint32_t>(offset),
                                               static_cast<std::uint32_t>(length), out, on_read);
                     });
                   },
                   &key, {static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(length)});
  }
  // Each row visited is locked (in a transaction) or checked as a get would be; with no row
  // locked anywhere the scan runs as it is. Rows inserted later into the range are not
  // locked against (no key-range locks): a scan repeated in a transaction may see them.
  std::size_t scan(TransactionState* txn, const K& from, std::size_t limit,
                   const Visit& visit) override {
    const TransactionManager::AbortsDeferredHere after_visits(transactions_);
    // A thread alone scans in place, as a read of it in a transaction runs exclusively.
    const OperationLatch& latch = transactions_.latch();
    if (!latch.held_here() && !latch.alone_here())
      return scan_leaf_by_leaf(txn, from, limit, visit);
    // Not restartable: the caller's visit has already seen the rows before a restart.
    return reading(txn, !kRestartable, [&](auto& tree) {
      if (txn == nullptr && !transactions_.locks().any_locked())
        return tree.scan(from, limit, visit);
      // Rows others removed are locked in the gap before each row and, where the scan ran to
      // the table's end, after the last.
      std::optional<K> last;
      bool stopped = false;
      const std::size_t visited = tree.scan(from, limit, [&](const K& key, const V& value) {
        lock_removed_rows(txn, last ? *last : from, !last, &key, false);
        lock_row(txn, key, LockMode::kShared);
        last = key;
        stopped = !visit(key, value) || abandoned(txn);
        return !stopped;
      });
      if (!stopped && visited < limit)
        lock_removed_rows(txn, last ? *last : from, !last, nullptr, false);
      return visited;
    });
  }

  // Durable: one walk of the tree, whose leaf change is logged with its undo in one record
  // (OperationLog). main-memory keeps its undo in DRAM, found by a lookup first.
  bool insert(TransactionState* txn, const K& key, const V& value) override {
    return changing(txn, key, kBeside, [&](TransactionState& t, auto& tree, auto& log) {
      if (undo_with_redo()) return operation(t, log, this, [&] { return tree.insert(key, value); });
      V old;
      if (tree.lookup(key, old)) return false;
      log_undo(t, UndoOperation::kInsert, key, 0, nullptr, 0);
      return operation(t, log, nullptr, [&] { return tree.insert(key, value); });
    });
  }
  bool update(TransactionState* txn, const K& key, const V& value) override {
    return update_part(txn, key, 0, sizeof(V), &value);
  }
  bool update_part(TransactionState* txn, const K& key, std::size_t offset, std::size_t length,
                   const void* bytes) override {
    check_part(offset, length);
    const auto part_offset = static_cast<std::uint32_t>(offset);
    const auto part_length = static_cast<std::uint32_t>(length);
    return changing(txn, key, kBeside, [&](TransactionState& t, auto& tree, auto& log) {
      auto change = [&] { return tree.update_part(key, part_offset, part_length, bytes); };
      if (undo_with_redo()) return operation(t, log, this, change);
      std::byte before[sizeof(V)];
      if (!tree.lookup_part(key, part_offset, part_length, before)) return false;
      log_undo(t, UndoOperation::kUpdate, key, part_offset, before, part_length);
      return operation(t, log, nullptr, change);
    });
  }
  bool remove(TransactionState* txn, const K& key) override {
    // Beside others only where it merges nothing (BTree::remove_without_merge).
    return changing(txn, key, kBeside, [&](TransactionState& t, auto& tree, auto& log) {
      removed_rows_.add(t, key);  // before the leaf changes: scans find it there
      const bool removed = [&] {
        if (undo_with_redo()) return operation(t, log, this, [&] { return tree.remove(key); });
        V old;
        if (!tree.lookup(key, old)) return false;
        log_undo(t, UndoOperation::kRemove, key, 0, &old, sizeof(V));
        return operation(t, log, nullptr, [&] { return tree.remove(key); });
      }();
      if (!removed) removed_rows_.drop(t, key);
      return removed;
    });
  }

  // Not logged: the checkpoint that switches the catalog to the loaded tree's new root makes
  // the load durable at once (BTree::bulk_load), the old root's free with it; the one after
  // it, that free on SSD. The one before it keeps out of the log that restart reads after a
  // crash amid the load the frees of the slots the load takes (the log's word on a page it
  // freed would give back the load's page).
  void bulk_load(std::size_t count, const Generate& generate, double fill_factor) override {
    const TransactionManager::AbortsDeferredHere after_generate(transactions_);
    const OperationLatch::Exclusive latched(transactions_.latch());
    // Empty but for rows an unfinished transaction removed: its abort would put them back
    // over the loaded ones.
    if (removed_rows_.any())
      fail("bulk_load: rows of the table were removed by unfinished transactions");
    transactions_.checkpoint();
    tree_.bulk_load(count, generate, fill_factor, [&, old_root = root_page_id()] {
      transactions_.free_with_next_catalog(old_root);
      transactions_.checkpoint();
    });
    root_page_ = root_page_id();
    if constexpr (kLogged) *height_ = {};  // a new root
    transactions_.checkpoint();
  }

  void apply_undo(TransactionState& txn, std::span<const std::byte> undo) override {
    // 1. Room in the log for the inverse operation (its compensation record is a small one).
    if constexpr (kLogged) {
      if (transactions_.durable())
        transactions_.reserve(Context::max_operation_log_bytes(height()));
    }
    // 2. Invert the operation, whether or not it reached the tree.
    invert(txn, tree_, context_, decode_undo(undo));
  }

  // The undo step beside other threads' changes (the caller holds the latch in changes mode):
  // the inverse operation runs as a change beside does, on rows the transaction still holds
  // locked, and logs no undo of its own. False, with nothing changed, where it needs more (a
  // split, a miss, a checkpoint for log room, a root moved since its height was known).
  bool apply_undo_beside(TransactionState& txn, std::span<const std::byte> undo) override {
    if constexpr (kChangesBeside) {
      if (kLogged && !transactions_.durable()) return false;
      const UndoStep step = decode_undo(undo);
      auto& target = read_access(context_);
      if constexpr (kLogged) {
        if (height_->root != root_page_id() || !transactions_.room_beside()) {
          target.add_undo_step_beside(true);
          return false;
        }
      }
      BesideAccess writes(target);
      try {
        on_tree_beside(writes, [&](auto& tree, auto& log) { invert(txn, tree, log, step); });
      } catch (const typename BesideAccess::RetryExclusively&) {
        target.add_undo_step_beside(true);
        return false;
      }
      target.add_undo_step_beside(false);
      return true;
    } else {
      (void)txn;
      (void)undo;
      return false;
    }
  }

  BTree<K, V, Access>& tree() { return tree_; }

 private:
  static ReadAccess& read_access(Context& context) {
    if constexpr (kLogged)
      return context.inner();
    else
      return context;
  }

  static void check_part(std::size_t offset, std::size_t length) {
    if (offset > sizeof(V) || length > sizeof(V) - offset)
      fail("value part [{}, {}) lies outside the {}-byte value", offset, offset + length,
           sizeof(V));
  }

  // An undo record decoded: UndoLogical, key, before-image (which stays in the record).
  struct UndoStep {
    UndoLogical header;
    K key;
    const std::byte* before;
  };
  UndoStep decode_undo(std::span<const std::byte> undo) const {
    UndoStep step;
    if (undo.size() < sizeof(step.header) + sizeof(K)) fail("undo record too short");
    std::memcpy(&step.header, undo.data(), sizeof(step.header));
    std::memcpy(&step.key, undo.data() + sizeof(step.header), sizeof(K));
    step.before = undo.data() + sizeof(step.header) + sizeof(K);
    if (step.header.key_size != sizeof(K) || step.header.before_size > sizeof(V) ||
        undo.size() < sizeof(step.header) + sizeof(K) + step.header.before_size)
      fail("undo record of table {} does not match its key and value sizes", table_id_);
    return step;
  }
  // The inverse of the step's operation as one operation on tree, logged into log (no undo of
  // its own), whether or not the operation reached the tree.
  template <typename Tree, typename Log>
  void invert(TransactionState& txn, Tree& tree, Log& log, const UndoStep& step) {
    const K& key = step.key;
    V current;
    const bool present = tree.lookup(key, current);
    if (step.header.operation == UndoOperation::kInsert) {
      if (present) operation(txn, log, nullptr, [&] { return tree.remove(key); });
    } else if (step.header.operation == UndoOperation::kUpdate) {
      if (present)
        operation(txn, log, nullptr, [&] {
          return tree.update_part(key, step.header.reserved2, step.header.before_size, step.before);
        });
    } else {
      V value;
      std::memcpy(&value, step.before, sizeof(V));
      operation(txn, log, nullptr,
                [&] { return present ? tree.update(key, value) : tree.insert(key, value); });
    }
  }

  // Levels of the tree (1: the root is a leaf), found again whenever the root has moved or a
  // bulk load filled it (a lower tree keeps its root: an overestimate is safe).
  std::uint32_t height() {
    const PageId root = root_page_id();
    if (root == height_->root) return height_->height;
    std::uint32_t levels = 1;
    auto node = access_.fix(root_, nullptr);
    for (;;) {
      NodeHeader header;
      std::memcpy(&header, node.read(kNodeHeaderOffset, sizeof(header)), sizeof(header));
      if (header.is_leaf) break;
      auto* first = reinterpret_cast<Swip*>(
          const_cast<std::byte*>(node.read(InnerLayout<K>::swip_offset(0), sizeof(Swip))));
      auto child = access_.fix(*first, &node);
      node = std::move(child);
      ++levels;
    }
    *height_ = {root, levels};
    return levels;
  }

  // Runs body(txn) in the given transaction, or in a single-operation one, once the log has
  // room for its undo record (and that record's copy) and its redo. The redo's room is that of
  // a tree one level higher: the operation may grow the tree, and its undo (an abort whose
  // undo must not fail for lack of log) then runs on the higher one.
  // Rows are named by their key's bytes: equal keys must have equal bytes (no padding).
  static_assert(std::has_unique_object_representations_v<K>,
                "a table key type must have no padding bytes (row locks hash its bytes)");
  LockName row_lock_name(const K& key) const {
    return lock_name(table_id_, std::as_bytes(std::span(&key, 1)));
  }
  // A scan's own transaction whose handle its visit function dropped: the scan stops there.
  static bool abandoned(const TransactionState* txn) { return txn != nullptr && txn->abandoned; }
  // Locks the row for txn, or checks it for an operation outside transactions: false when a
  // change outside transactions beside others holds it for a moment (LockManager::lock_brief);
  // then the caller waits for it where it holds no page latch, and reads again.
  bool lock_row(TransactionState* txn, const K& key, LockMode mode) {
    LockManager& locks = transactions_.locks();
    if (txn == nullptr && !locks.any_locked()) [[likely]]
      return true;  // nothing to check against, and the name is not needed
    if (txn == nullptr) return locks.check_free(table_id_, row_lock_name(key), mode);
    locks.lock(*txn, table_id_, row_lock_name(key), mode);
    return true;
  }

  // read(on_read) reads the row, calling on_read while its leaf is held (BTree::lookup_part).
  // Outside a transaction the row's lock is checked there: a change of the row needs the leaf,
  // so a lock found free then means the bytes read were committed (a check after the leaf is
  // let go could find the lock of a transaction free that had changed the row again and
  // committed meanwhile: the bytes read were never committed).
  template <typename Read>
  bool reading_row(TransactionState* txn, const K& key, Read&& read) {
    if (txn != nullptr) {
      lock_row(txn, key, LockMode::kShared);
      return read(typename BTree<K, V, Access>::NothingOnRead{});
    }
    for (;;) {
      bool row_free = true;
      std::exception_ptr conflict;  // thrown once the leaf is let go
      const bool found = read([&] {
        try {
          row_free = lock_row(nullptr, key, LockMode::kShared);
          conflict = nullptr;
        } catch (const LockConflict&) {
          conflict = std::current_exception();
        }
      });
      if (conflict != nullptr) std::rethrow_exception(conflict);
      if (row_free) return found;
      // Its changer waits for nothing and lets go once its commit is durable.
      transactions_.locks().wait_while_brief(row_lock_name(key));
    }
  }
  // A row a scan outside transactions copied while a change outside transactions holds it.
  struct RowBusy {
    K key;
  };
  // Locks (in a transaction) or checks the rows that other unfinished transactions removed
  // from what a scan covered, from low to high (none: the table's end), as it would the rows
  // themselves (engine/removed_rows.hpp). A row a change outside transactions holds for a
  // moment is returned (RowBusy for a scan outside transactions). A scan in place locks the
  // gap before each row it visits; one leaf by leaf its copy's (scan_leaf_by_leaf).
  std::optional<K> lock_removed_rows(TransactionState* txn, const K& low, bool low_inclusive,
                                     const K* high, bool high_inclusive) {
    if (!removed_rows_.any()) [[likely]]
      return std::nullopt;
    std::vector<K> keys;
    removed_rows_.others_between(txn, low, low_inclusive, high, high_inclusive, keys);
    for (const K& key : keys)
      if (!lock_row(txn, key, LockMode::kShared)) return key;
    return std::nullopt;
  }

  // body(tree) runs a read on a tree. In a transaction, or outside one while changes run, it
  // holds the database's latch for changes and latches the leaf (BesideAccess). Otherwise,
  // outside any transaction, it holds the latch shared: main-memory's reads change nothing;
  // the buffer manager's go through ResidentReads (tiers/resident_reads.hpp), whose misses it
  // serves one at a time beside the other readers. Should a miss find no frame it could take
  // without waiting for readers, the read starts again under the exclusive latch. nvm-direct's
  // reads hold it shared too.
  static constexpr bool kRestartable = true;
  // What a try beside others stopped at that a reader could load (bring_path_in), and how
  // often an operation brings it in before it runs exclusively.
  using ToLoad = ResidentWrites::ToLoad;
  static constexpr ByteRange kWholeValue{0, sizeof(V)};
  static constexpr ByteRange kNoValue{0, 0};  // a scan brings in its whole leaf instead
  static constexpr ByteRange kWholePage[] = {{0, kPageSize}};
  static constexpr std::span<const ByteRange> kWholeLeaf{kWholePage};
  static constexpr unsigned kBringIns = 2;
  // path_key: the key whose path (and bytes path_part of its value, path_runs of its leaf) a
  // read in a transaction brings in (bring_path_in) and tries beside once more, should it stop
  // at a page or line not in DRAM.
  template <typename Body>
  auto reading(TransactionState* txn, bool restartable, Body&& body, const K* path_key = nullptr,
               ByteRange path_part = kWholeValue, std::span<const ByteRange> path_runs = {}) {
    // Reads outside transactions too, for a while after this thread saw changes inside
    // (OperationLatch::changes_lately). Not inside another call (a scan's visit
    // function): that nests where it is.
    const OperationLatch& latch = transactions_.latch();
    // In a transaction of a thread alone, exclusive is cheaper (OperationLatch::alone_here).
    if (restartable && !latch.held_here() &&
        (txn != nullptr ? !latch.alone_here() : latch.changes_lately())) {
      for (bool brought_in = false;;) {
        BesideAccess reads(read_access(context_));
        try {
          const OperationLatch::Changes latched(transactions_.latch(),
                                                OperationLatch::Purpose::kRead);
          BTree<K, V, BesideAccess> tree(reads, root_, structure_);
          auto result = body(tree);
          read_access(context_).add_change_beside(false);
          return result;
        } catch (const typename BesideAccess::RetryExclusively&) {
          read_access(context_).add_change_beside(true);
        }
        // Outside transactions the shared latch's reads below load it anyway.
        if constexpr (kBufferManaged) {
          if (txn != nullptr && path_key != nullptr && reads.needs_loading() && !brought_in &&
              bring_path_in(*path_key, path_part, path_runs)) {
            brought_in = true;
            continue;
          }
        }
        break;
      }
    }
    if (txn == nullptr) {
      if constexpr (!kBufferManaged) {
        // main-memory's reads change nothing shared, nvm-direct's nothing but the device's
        // per-thread counts and its simulated LLC (emulation/nvm_device.hpp). But a scan in
        // place (a thread alone, not restartable) holds the latch exclusive, as on the buffer
        // manager: its visit function may read in a transaction, which runs exclusively.
        if (restartable) {
          const OperationLatch::Shared latched(transactions_.latch());
          return body(read_tree_);
        }
      } else if (restartable) {
        try {
          const OperationLatch::Shared latched(transactions_.latch());
          ResidentReads reads(context_.inner());
          BTree<K, V, ResidentReads> tree(reads, root_);
          return body(tree);
        } catch (const ResidentReads::NotResident&) {
        }
      }
    }
    const OperationLatch::Exclusive latched(transactions_.latch(), OperationLatch::Purpose::kRead);
    return body(read_tree_);
  }

  // A scan beside others (every architecture): leaf by leaf, rows are copied and locked
  // (or checked) while their leaf is held, under the latch taken for that copy alone, as a get
  // takes it (a leaf that needs more is copied again exclusively); they are visited with no latch
  // held, so the visit function may read, while a change from inside it is refused as ever
  // (OperationLatch::Visiting). A visit function may stop early, so the first copy of a scan
  // in a transaction takes 4 rows, each next one twice as many, up to a whole leaf: it locks
  // at most a few rows past the last one it visits. A row another transaction holds ends the
  // copy before it, unless it is the copy's first row to visit: the scan meets the
  // LockConflict only if its visit function asks for that row.
  std::size_t scan_leaf_by_leaf(TransactionState* txn, const K& from, std::size_t limit,
                                const Visit& visit) {
    std::vector<std::byte> batch;
    std::size_t visited = 0;
    // Outside a transaction rows are only checked, so whole leaves are copied at once.
    std::size_t rows_per_copy = txn != nullptr ? 4 : BTree<K, V, Access>::kLeafCapacity;
    K next = from;
    bool resumed = false;  // next was the last row visited: skip it
    while (visited < limit) {
      const std::size_t wanted = std::min(limit - visited, rows_per_copy) + (resumed ? 1 : 0);
      rows_per_copy = std::min<std::size_t>(2 * rows_per_copy, BTree<K, V, Access>::kLeafCapacity);
      bool more = false;  // the leaf has a right neighbour, whose keys start at fence
      bool cut = false;   // the copy ended before a row another transaction holds
      K fence = next;
      std::size_t copied;
      try {
        copied = reading(
            txn, kRestartable,
            [&](auto& tree) {
              std::optional<K> leaf_fence;
              // What the copy covered: to its last row where it stopped inside the leaf, else
              // to the next leaf's fence or the table's end; its removed rows are locked while
              // the leaf is held, so no remove, reinsert and commit of one comes in between.
              // A removed row another transaction holds is met as a row would be: it ends the
              // copy before it, unless no row before it is left to visit.
              const auto lock_removed = [&](std::size_t n) -> std::size_t {
                if (!removed_rows_.any()) [[likely]]
                  return n;
                const bool inside = n == wanted || cut;
                K last_copied = next;
                V value;
                if (inside) BTree<K, V, Access>::batch_entry(batch, n - 1, last_copied, value);
                const K* high = inside ? &last_copied : leaf_fence ? &*leaf_fence : nullptr;
                std::vector<K> removed;
                removed_rows_.others_between(txn, next, !resumed, high, inside, removed);
                for (const K& key : removed) {
                  try {
                    if (!lock_row(txn, key, LockMode::kShared)) throw RowBusy{key};
                  } catch (const LockConflict&) {
                    std::size_t below = 0, to_visit_below = 0;
                    for (K row; below < n; ++below) {
                      BTree<K, V, Access>::batch_entry(batch, below, row, value);
                      if (!(row < key)) break;
                      if (!(resumed && row == next)) ++to_visit_below;
                    }
                    if (to_visit_below == 0) throw;
                    cut = true;
                    return below;
                  }
                }
                return n;
              };
              cut = false;
              std::size_t to_visit = 0;  // rows copied so far that the visit has not seen
              const std::size_t n = tree.copy_leaf_from(
                  next, wanted, batch, leaf_fence,
                  [&](const K& key) {
                    try {
                      if (!lock_row(txn, key, LockMode::kShared)) throw RowBusy{key};
                    } catch (const LockConflict&) {
                      if (to_visit == 0) throw;
                      cut = true;
                      return false;
                    }
                    if (!(resumed && key == next)) ++to_visit;
                    return true;
                  },
                  lock_removed);
              more = leaf_fence.has_value();
              if (more) fence = *leaf_fence;
              return n;
            },
            &next, kNoValue, kWholeLeaf);
      } catch (const RowBusy& busy) {
        transactions_.locks().wait_while_brief(row_lock_name(busy.key));  // then copy again
        continue;
      }
      const OperationLatch::Visiting visiting(transactions_.latch());
      K key = next;
      V value;
      // The row resumed after may be gone (removed outside the scan's transaction): then the
      // copy's first row is one to visit, and it holds one row more than the limit leaves.
      std::size_t skipped = 0;
      if (resumed && copied > 0) {
        BTree<K, V, Access>::batch_entry(batch, 0, key, value);
        if (key == next) skipped = 1;
      }
      for (std::size_t e = skipped; e < copied && visited < limit; ++e) {
        BTree<K, V, Access>::batch_entry(batch, e, key, value);
        ++visited;
        if (!visit(static_cast<const K&>(key), static_cast<const V&>(value)) || abandoned(txn))
          return visited;
      }
      if ((copied == wanted || cut) && copied > skipped) {
        next = key;  // the copy stopped inside the leaf: go on after its last row
        resumed = true;
        continue;
      }
      if (!more) break;
      next = BTree<K, V, Access>::next_leaf_from(next, fence);
      resumed = false;
    }
    return visited;
  }

  // body(txn, tree, log) makes the change in txn through the tree, logging into log. A change
  // that may run beside others (beside) is tried so first (changing_beside, or outside a
  // transaction autocommitting_beside); otherwise, or when it needs more, it runs under the
  // exclusive latch.
  static constexpr bool kBeside = true;
  template <typename Body>
  bool changing(TransactionState* txn, const K& key, bool beside, Body&& body) {
    if constexpr (kChangesBeside) {
      if (beside && (!kLogged || transactions_.durable()) && !transactions_.latch().held_here() &&
          !transactions_.latch().alone_here()) {
        // Again after what it stopped at is loaded as a reader would (twice at most: its
        // search may stop at one line, its leaf change at others), or after a checkpoint
        // beside changes, if that was what it needed.
        unsigned brought_in = 0;
        for (bool checkpointed = false;;) {
          ToLoad to_load;  // what the try stopped at that a reader could load
          const std::optional<bool> changed = txn != nullptr
                                                  ? changing_beside(*txn, key, body, to_load)
                                                  : autocommitting_beside(key, body, to_load);
          if (changed) return *changed;
          if (to_load.anything && brought_in < kBringIns &&
              bring_path_in(key, kWholeValue, to_load.leaf_runs())) {
            ++brought_in;
            continue;
          }
          if (checkpointed || !transactions_.checkpoint_if_due()) break;
          checkpointed = true;
        }
      }
    }
    const OperationLatch::Exclusive latched(transactions_.latch());
    [[maybe_unused]] const bool row_free = lock_row(txn, key, LockMode::kExclusive);
    assert(row_free && "no brief lock outlives changes mode");
    if constexpr (kLogged) {
      // Room for this change and for the largest undo step of any table: its undo may come
      // after another transaction's on a deeper tree.
      if (transactions_.durable())
        transactions_.reserve(
            kChangeUndoLogBytes +
            transactions_.note_undo_step(Context::max_operation_log_bytes(height() + 1)));
    }
    if (txn != nullptr) return body(*txn, tree_, context_);
    TransactionState& single = transactions_.begin_autocommit();
    bool changed;
    try {
      changed = body(single, tree_, context_);
    } catch (...) {
      transactions_.abort(single);
      throw;
    }
    transactions_.commit(single);
    return changed;
  }

  // What a change logs for its undo: its undo record and that record's copy (its redo is at
  // most an operation on the tree).
  static constexpr std::uint64_t kUndoPayload = sizeof(UndoLogical) + sizeof(K) + sizeof(V);
  static constexpr std::uint64_t kChangeUndoLogBytes =
      2 * TransactionManager::undo_copy_bytes(kUndoPayload);
  // And beside others, where it changes one leaf entry: one record holding its undo and the
  // leaf change (the key not repeated, at most the value's bytes), plus that undo's copy;
  // nvm-direct logs before-images and byte ranges instead.
  static constexpr std::uint64_t kBesideLogBytes =
      (kNvmDirect ? OperationLog<NvmDirectWrites>::max_in_place_leaf_change_log_bytes(kUndoPayload)
                  : log_record_size(kUndoPayload + sizeof(RedoPageBytes) + sizeof(LeafChange) +
                                    sizeof(V))) +
      TransactionManager::undo_copy_bytes(kUndoPayload);
  static constexpr std::uint64_t kBesideBound = kNvmDirect
                                                    ? TransactionManager::kInPlaceBesideChangeBound
                                                    : TransactionManager::kBesideChangeBound;
  // (With the commit record of a change outside transactions.)
  static constexpr bool kChangesBeside =
      !kLogged || kBesideLogBytes + log_record_size(0) <= kBesideBound;

  // The change beside other threads' (engine/operation_latch.hpp, changes mode): one leaf
  // entry, latched page by page (BesideAccess); on the buffer manager of a page whose path is
  // in DRAM, logged through this thread's own operation log. Nothing when the change needs
  // more (a split or merge; on the buffer manager a miss, a checkpoint to make log room, a
  // root moved since its height was known): then it has changed nothing, and the caller runs
  // it exclusively; to_load says what it stopped at that a reader could load.
  template <typename Body>
  std::optional<bool> changing_beside(TransactionState& txn, const K& key, Body& body,
                                      ToLoad& to_load) {
    const OperationLatch::Changes latched(transactions_.latch());
    return change_beside(txn, key, !kBrief, body, to_load);
  }

  // A change outside any transaction beside others: a single-operation transaction of this
  // thread's own (TransactionManager::begin_brief), whose row lock is brief (LockManager) and
  // whose commit is durable before the latch is let go. A failure in the middle of the change
  // is undone under the exclusive latch, as the exclusive path undoes its own.
  template <typename Body>
  std::optional<bool> autocommitting_beside(const K& key, Body& body, ToLoad& to_load) {
    TransactionState* failed = nullptr;
    std::exception_ptr failure;
    {
      const OperationLatch::Changes latched(transactions_.latch());
      TransactionState& single = transactions_.begin_brief();
      std::optional<bool> changed;
      try {
        changed = change_beside(single, key, kBrief, body, to_load);
      } catch (const LockConflict&) {
        transactions_.end_brief(single);  // a transaction holds the row: nothing changed
        throw;
      } catch (...) {
        // Its undo waits for the exclusive latch, which waits for everyone inside: nobody
        // inside may wait for its lock meanwhile (readers and changes outside transactions
        // wait for a brief one).
        transactions_.locks().end_brevity(single);
        failed = &single;
        failure = std::current_exception();
        try {
          transactions_.list(single);
        } catch (...) {
          transactions_.forget(single);  // no abort without the list: restart undoes it
          throw;
        }
      }
      if (failed == nullptr) {
        if (!changed) {
          transactions_.end_brief(single);
          return std::nullopt;
        }
        try {
          transactions_.commit(single);
        } catch (...) {
          transactions_.forget(single);
          throw;
        }
        return changed;
      }
    }
    const OperationLatch::Exclusive latched(transactions_.latch());
    try {
      transactions_.abort(*failed);
    } catch (...) {
      transactions_.forget(*failed);
    }
    std::rethrow_exception(failure);
  }

  // The change beside others, the latch held in changes mode; brief: txn is a
  // single-operation one of begin_brief.
  static constexpr bool kBrief = true;
  template <typename Body>
  std::optional<bool> change_beside(TransactionState& txn, const K& key, bool brief, Body& body,
                                    ToLoad& to_load) {
    auto& target = read_access(context_);
    // An undo step of this table: one operation on this tree, a level higher should it grow
    // meanwhile (as the exclusive change reserves).
    std::uint64_t undo_step_bytes = 0;
    if constexpr (kLogged) {
      if (height_->root != root_page_id()) {
        target.add_change_beside(true);
        return std::nullopt;
      }
      undo_step_bytes = Context::max_operation_log_bytes(height_->height + 1);
    }
    if (brief)
      transactions_.locks().lock_brief(txn, table_id_, row_lock_name(key));
    else
      lock_row(&txn, key, LockMode::kExclusive);
    if (!transactions_.room_beside() || !transactions_.undo_room_beside(undo_step_bytes)) {
      target.add_change_beside(true);
      return std::nullopt;
    }
    BesideAccess writes(target);
    // main-memory notes its undo step before the change (log_undo): a retry notes it again.
    const std::size_t undo_steps = txn.undo.size();
    const std::size_t undo_bytes = txn.undo_bytes.size();
    try {
      const bool changed =
          on_tree_beside(writes, [&](auto& tree, auto& log) { return body(txn, tree, log); });
      target.add_change_beside(false);
      return changed;
    } catch (const typename BesideAccess::RetryExclusively&) {
      if constexpr (!kLogged) {
        txn.undo.resize(undo_steps);
        txn.undo_bytes.resize(undo_bytes);
      }
      if constexpr (kBufferManaged) to_load = writes.to_load();
      target.add_change_beside(true);
      if (writes.structure_refused()) target.add_structure_retried();
      return std::nullopt;
    }
  }
  // Runs f(tree, log) on the tree beside others over writes: on the buffer manager and
  // nvm-direct logged through this thread's own operation log, on main-memory unlogged.
  template <typename F>
  decltype(auto) on_tree_beside(BesideAccess& writes, F&& f) {
    if constexpr (kLogged) {
      OperationLog<BesideAccess>& log = this_threads_log();
      log.bind(writes, transactions_, context_.swizzled_swips());
      LoggedAccess<BesideAccess> access(log);
      BTree<K, V, LoggedAccess<BesideAccess>> tree(access, root_, structure_);
      return f(tree, log);
    } else {
      BTree<K, V, MainMemoryWrites> tree(writes, root_, structure_);
      return f(tree, writes);
    }
  }

  // A change or a read that stopped beside others at a page or line not in DRAM brings in its
  // path, bytes `part` of its key's value and `leaf_runs` of its leaf (the runs a leaf change
  // claimed) as a reader outside transactions would: under the shared latch, its SSD reads and
  // NVM line loads beside other readers' (tiers/reader_misses.cpp). Then it tries beside once
  // more, and the exclusive latch (should it still be needed) is held for the operation, not
  // for the loads. False when no frame was free for a reader: the exclusive run loads the
  // path itself.
  bool bring_path_in(const K& key, ByteRange part, std::span<const ByteRange> leaf_runs) {
    if constexpr (kBufferManaged) {
      try {
        const OperationLatch::Shared latched(transactions_.latch());
        ResidentReads reads(context_.inner());
        BTree<K, V, ResidentReads> tree(reads, root_);
        tree.bring_leaf_in(key, part, leaf_runs);
        return true;
      } catch (const ResidentReads::NotResident&) {
      }
    }
    return false;
  }
  // Kept per thread: its buffers are reused from one change to the next.
  static OperationLog<BesideAccess>& this_threads_log() {
    thread_local OperationLog<BesideAccess> log;
    return log;
  }

  void log_undo(TransactionState& txn, UndoOperation operation, const K& key,
                std::uint32_t part_offset, const void* before, std::uint32_t before_size) {
    UndoLogical header{.table_id = table_id_,
                       .operation = operation,
                       .reserved = 0,
                       .key_size = static_cast<std::uint16_t>(sizeof(K)),
                       .before_size = before_size,
                       .reserved2 = part_offset};
    thread_local std::vector<std::byte> undo;  // changes run side by side: one per thread
    encode_undo(undo, header, &key, {static_cast<const std::byte*>(before), before_size});
    transactions_.log_undo(txn, *this, undo);
  }

  bool undo_with_redo() const {
    if constexpr (kLogged)
      return transactions_.durable();
    else
      return false;
  }

  // One tree change as one logged operation; the table's new root, if it moved, with it.
  // undo_table: this table, when the leaf change's undo is logged with it (undo_with_redo).
  template <typename Log, typename Change>
  bool operation(TransactionState& txn, Log& log, UndoTarget* undo_table, Change&& change) {
    if constexpr (kLogged) {
      if (!transactions_.durable()) return change();
      log.begin(txn, InnerLayout<K>::kSwipsOffset,
                Context::max_operation_log_bytes(height_->height), undo_table);
      try {
        const bool changed = change();
        log_root_move(log);
        log.end();
        return changed;
      } catch (...) {
        // Logged as far as it got: a root that grew before the failure too.
        log_root_move(log);
        log.abandon();
        throw;
      }
    } else {
      (void)log;
      (void)undo_table;
      return change();
    }
  }

  template <typename Log>
  void log_root_move(Log& log) {
    if (!log.root_may_change()) return;
    // (Written only where the root moved: a split beside others' reads it too.)
    if (const PageId root = root_page_id(); root != root_page_) {
      log.note_root(table_id_, root);
      root_page_ = root;
    }
  }

  PageId root_page_id() const {
    if constexpr (kLogged) {
      const Swip root = Swip::load(root_);  // a change's miss beside may swizzle it
      if (root.is_swizzled()) return root.frame<FrameHeader>()->page_id;
      return root.page_id();
    } else {
      return 0;
    }
  }

  Context& context_;
  TransactionManager& transactions_;
  std::uint32_t table_id_;
  RemovedRows<K> removed_rows_;  // by unfinished transactions, for scans
  Swip& root_;
  AccessMember access_;
  BTree<K, V, Access> tree_;
  BTree<K, V, ReadAccess> read_tree_;
  PageId root_page_;
  TreeHeight* height_ = nullptr;  // shared with other objects over this tree
  // Leaves split beside changes on main-memory and the buffer manager: the tree's version,
  // shared with the other objects over the tree too.
  StructureVersion* structure_ = nullptr;
};

template <typename Context>
struct ContextInner {
  using type = MainMemoryAccess;
};
template <typename Inner>
struct ContextInner<OperationLog<Inner>> {
  using type = Inner;
};

template <TableKey K, TableValue V>
std::shared_ptr<TableInterface<K, V>> make_btree_table(const TableBinding& binding) {
  return std::visit(
      [&](auto* context) -> std::shared_ptr<TableInterface<K, V>> {
        using Context = std::remove_pointer_t<decltype(context)>;
        using Inner = typename ContextInner<Context>::type;
        return std::make_shared<BTreeTable<K, V, Inner>>(*context, *binding.transactions,
                                                         binding.table_id, *binding.root);
      },
      binding.access);
}

}  // namespace tristore
