#pragma once
// A B+-tree of fixed-size keys and values on 16 KiB pages, written once against the PageAccess
// interface and instantiated for every architecture (docs/design.md section 4).
//
// Access patterns (what the storage layer sees):
//  - lookups and point updates ask for single keys during the binary search, then for the few
//    bytes of one value: a lookup touches about log2(entries) cache lines of a leaf;
//  - inserts and deletes of single entries ask for the shifted part of the arrays only;
//  - splits, merges and scans ask for whole pages.
// At most three guards are held at once (parent, node, sibling), except bulk loading and the
// validation walk, which hold one root-to-leaf path.
//
// Underflow policy: a node with fewer than a quarter of its capacity is merged with a neighbour
// (the right one, else the left one) when the merged node is at most three quarters full, or,
// for an empty node, when the merged node fits. Otherwise it stays underfull (no borrowing):
// when both neighbours are nearly full, even an empty leaf may remain until they shrink. Leaves are
// checked after the delete that shrinks them, inner nodes when a delete descends through them. A
// root with a single child absorbs that child, so the height shrinks again.
#include <algorithm>
#include <cassert>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "btree/leaf_change.hpp"
#include "btree/node_layout.hpp"
#include "btree/page_access.hpp"
#include "common/error.hpp"
#include "common/ignoring_racing_reads.hpp"
#include "common/structure_version.hpp"

namespace tristore {

struct BTreeStats {
  std::uint32_t height = 0;  // 1: the root is a leaf
  std::uint64_t inner_nodes = 0;
  std::uint64_t leaves = 0;
  std::uint64_t entries = 0;
  std::uint32_t min_leaf_entries = 0;
  std::uint32_t max_leaf_entries = 0;
};

// A new, empty tree of any key and value type: one leaf. Store the returned swip at a stable
// DRAM address (the root's owning swip).
template <PageAccess Access>
Swip create_empty_tree(Access& access) {
  typename Access::Guard root = access.allocate_page();
  NodeHeader header{.count = 0, .is_leaf = 1, .reserved = {}};
  std::memcpy(root.write(kNodeHeaderOffset, sizeof(NodeHeader)), &header, sizeof(header));
  return access.swip_of(root);
}

template <typename K, typename V, PageAccess Access>
requires std::is_trivially_copyable_v<K> && std::is_trivially_copyable_v<V> &&
    std::totally_ordered<K>
class BTree {
  using Guard = typename Access::Guard;
  using Leaf = LeafLayout<K, V>;
  using Inner = InnerLayout<K>;
  static_assert(std::is_move_constructible_v<Guard> && std::is_move_assignable_v<Guard>,
                "the B-tree moves guards down the path");
  static_assert(LeafGeometry::of(sizeof(K), sizeof(V)).values_offset == Leaf::kValuesOffset &&
                    LeafGeometry::of(sizeof(K), sizeof(V)).capacity == Leaf::kCapacity,
                "a leaf change is replayed with the geometry its sizes give");

 public:
  static constexpr std::uint32_t kLeafCapacity = Leaf::kCapacity;
  static constexpr std::uint32_t kInnerCapacity = Inner::kCapacity;
  static constexpr std::uint32_t kLeafUnderfull = kLeafCapacity / 4;
  static constexpr std::uint32_t kInnerUnderfull = kInnerCapacity / 4;
  static constexpr std::uint32_t kLeafMergeLimit = kLeafCapacity * 3 / 4;
  static constexpr std::uint32_t kInnerMergeLimit = kInnerCapacity * 3 / 4;

  static Swip create(Access& access) { return create_empty_tree(access); }

  // `root` must outlive the tree object and stay at its address (it is the root's owning swip).
  BTree(Access& access, Swip& root) : access_(access), root_(root) {}
  // Beside changes, where leaves may split beside them (kSplitsBeside): every descent checks
  // the tree's structure version (common/structure_version.hpp), which splits move.
  BTree(Access& access, Swip& root, StructureVersion* structure)
      : access_(access), root_(root), structure_(structure) {}

  struct NothingOnRead {
    void operator()() const {}
  };
  template <typename OnRead = NothingOnRead>
  bool lookup(const K& key, V& out, OnRead&& on_read = {}) {
    return lookup_part(key, 0, sizeof(V), &out, on_read);
  }

  // Copies value bytes [offset, offset + length) of `key` to `out`. on_read() runs after the
  // search, found or not, while the leaf is still held or within the read that is validated
  // (BTreeTable checks the row's lock there: no change of the row comes in between). It must
  // not throw, and may run more than once.
  template <typename OnRead = NothingOnRead>
  bool lookup_part(const K& key, std::uint32_t offset, std::uint32_t length, void* out,
                   OnRead&& on_read = {}) {
    assert(offset + length <= sizeof(V));
    auto copy = [&](Guard& leaf, std::uint32_t count) {
      Position at = search(leaf, count, key);
      if (at.found && length > 0)
        std::memcpy(out, leaf.read(Leaf::value_offset(at.index) + offset, length), length);
      on_read();
      return at.found;
    };
    std::uint32_t count;
    if constexpr (kOptimisticLeafReads) {
      // The count is read within each try: the leaf may change beside it. A split beside may
      // have moved the key on meanwhile: then from the root again.
      for (;;) {
        std::uint64_t seen = 0;
        Guard leaf = find_leaf(key, count, LeafLatch::kNone, &seen);
        const bool found = access_.read_leaf(leaf, [&] { return copy(leaf, header(leaf).count); });
        if (!structure_moved(seen)) [[likely]]
          return found;
      }
    } else {
      Guard leaf = find_leaf(key, count);
      return copy(leaf, count);
    }
  }

  // Brings the path to the leaf `key` belongs in, through an access that loads what is missing
  // (tiers/resident_reads.hpp): the lines its search reads, bytes `part` of the key's value (if
  // it is there), and `runs` of the leaf; a read or change that comes next finds them in DRAM.
  void bring_leaf_in(const K& key, ByteRange part, std::span<const ByteRange> runs) {
    assert(part.offset + part.length <= sizeof(V));
    std::uint32_t count;
    Guard leaf = find_leaf(key, count);
    const Position at = search(leaf, count, key);
    if (at.found && part.length > 0)
      leaf.read(Leaf::value_offset(at.index) + part.offset, part.length);
    for (const ByteRange& run : runs) {
      assert(run.length > 0 && run.offset + run.length <= kPageSize);
      leaf.read(run.offset, run.length);
    }
  }

  bool update(const K& key, const V& value) { return update_part(key, 0, sizeof(V), &value); }

  // Overwrites value bytes [offset, offset + length) of `key`; only they become dirty.
  bool update_part(const K& key, std::uint32_t offset, std::uint32_t length, const void* bytes) {
    assert(offset + length <= sizeof(V));
    std::uint32_t count;
    Guard leaf = find_leaf_to_change(key, count);
    Position at = search(leaf, count, key);
    if (!at.found) return false;
    if (length > 0)
      change_leaf(leaf,
                  {.kind = LeafChangeKind::kUpdate,
                   .flags = 0,
                   .index = static_cast<std::uint16_t>(at.index),
                   .key_size = sizeof(K),
                   .part_offset = static_cast<std::uint16_t>(offset),
                   .value_size = sizeof(V),
                   .bytes_size = length},
                  key, bytes);
    return true;
  }

  // Returns false (and changes nothing) when the key exists.
  bool insert(const K& key, const V& value) {
    {
      std::uint32_t count;
      Guard leaf = find_leaf_to_change(key, count);
      Position at = search(leaf, count, key);
      if (at.found) return false;
      if (count < kLeafCapacity) {
        insert_into_leaf(leaf, count, at.index, key, value);
        return true;
      }
    }
    if constexpr (kSplitsBeside) {
      if (structure_ != nullptr) return insert_splitting_leaf_beside(key, value);
    }
    return insert_with_splits(key, value);
  }

  bool remove(const K& key) {
    if constexpr (requires { access_.refuse_structure_change(); }) return remove_without_merge(key);
    bool found = remove_with_merges(key);
    if (found) collapse_root();
    return found;
  }

  // Calls visit(key, value) for entries with key >= from in ascending order, at most `limit`
  // of them, until visit returns false; returns the number visited. Each leaf is copied out
  // before its entries are visited, so `visit` may use the tree.
  template <typename Visit>
  std::size_t scan(const K& from, std::size_t limit, Visit&& visit) {
    std::size_t visited = 0;
    std::vector<std::byte> batch;
    K next = from;
    while (visited < limit) {
      std::optional<K> fence;  // the smallest key above this leaf's range
      std::size_t n = copy_leaf_from(
          next, limit - visited, batch, fence, [](const K&) { return true; },
          [](std::size_t copied) { return copied; });
      for (std::size_t e = 0; e < n; ++e) {
        K k;
        V v;
        batch_entry(batch, e, k, v);
        ++visited;
        if (!visit(static_cast<const K&>(k), static_cast<const V&>(v))) return visited;
      }
      if (!fence) break;
      next = next_leaf_from(next, *fence);
    }
    return visited;
  }

  // One leaf of a scan: the entries with key >= from in the leaf that holds `from`, at most
  // `limit`, copied into batch (key, value, key, value...), and in `fence` the smallest key
  // above the leaf's range (none: the last leaf). on_copied(key) runs for each entry copied,
  // and all_copied(n) after the last, while the leaf is still held (BTreeTable locks the rows
  // there, and the rows removed from what the copy covered); on_copied returning false ends
  // the copy before that entry, and all_copied returns how many of the n entries to keep.
  template <typename OnCopied, typename AllCopied>
  std::size_t copy_leaf_from(const K& from, std::size_t limit, std::vector<std::byte>& batch,
                             std::optional<K>& fence, OnCopied&& on_copied,
                             AllCopied&& all_copied) {
    K above{};
    bool bounded = false;
    Guard node = leaf_to_copy(from, above, bounded);
    fence.reset();
    if (bounded) fence = above;
    const std::byte* page = node.whole_page();
    std::uint32_t count = checked(node, load<NodeHeader>(page + kNodeHeaderOffset)).count;
    std::uint32_t i = 0, hi = count;  // lower bound of `from`
    while (i < hi) {
      std::uint32_t mid = i + (hi - i) / 2;
      if (load<K>(page + Leaf::key_offset(mid)) < from)
        i = mid + 1;
      else
        hi = mid;
    }
    std::size_t n = std::min<std::size_t>(count - i, limit);
    batch.resize(n * (sizeof(K) + sizeof(V)));
    for (std::size_t e = 0; e < n; ++e) {
      std::byte* out = batch.data() + e * (sizeof(K) + sizeof(V));
      std::memcpy(out, page + Leaf::key_offset(i + e), sizeof(K));
      std::memcpy(out + sizeof(K), page + Leaf::value_offset(i + e), sizeof(V));
      K key;
      std::memcpy(&key, out, sizeof(K));
      if (!on_copied(static_cast<const K&>(key))) {
        n = e;
        break;
      }
    }
    n = all_copied(n);
    batch.resize(n * (sizeof(K) + sizeof(V)));
    return n;
  }

  // The leaf that holds `from`, latched shared, and in `above` the smallest key above its
  // range where a parent has one (bounded).
  Guard leaf_to_copy(const K& from, K& above, bool& bounded) {
    for (;;) {
      bounded = false;
      const std::uint64_t seen = stable_structure();
      Guard node = access_.fix(root_, nullptr);
      for (std::uint32_t depth = 1;; check_depth(node, ++depth)) {
        latch_if_leaf(node, LeafLatch::kShared);
        if (is_leaf(node)) {
          if (!structure_moved(seen)) [[likely]]
            return node;
          break;  // its key above too may be another leaf's
        }
        std::uint32_t i;
        {
          [[maybe_unused]] const RacingSplits racing(structure_ != nullptr);
          const NodeHeader h = header(node);
          i = upper_bound(node, h.count, from);
          if (i < h.count) {
            above = key_at(node, i);
            bounded = true;
          }
        }
        Guard child = access_.fix(swip_at(node, i), &node);
        if (structure_moved(seen)) [[unlikely]]
          break;
        node = std::move(child);
      }
    }
  }

  // Entry e of a batch copy_leaf_from filled.
  static void batch_entry(const std::vector<std::byte>& batch, std::size_t e, K& key, V& value) {
    const std::byte* entry = batch.data() + e * (sizeof(K) + sizeof(V));
    std::memcpy(&key, entry, sizeof(K));
    std::memcpy(&value, entry + sizeof(K), sizeof(V));
  }
  // Where a scan at `from` goes on after its leaf, whose right neighbour starts at `fence`.
  // Separators rise from leaf to leaf; one that does not is a damaged inner page.
  static const K& next_leaf_from(const K& from, const K& fence) {
    if (!(from < fence)) fail("corrupt B-tree: the scan's next separator does not rise");
    return fence;
  }

  // Fills the empty tree with `count` entries; generate(i, key, value) gives the i-th, in
  // strictly ascending key order, called once per i in order. Nodes are filled to
  // `fill_factor` of their capacity. On an Error (keys out of order) the tree keeps the
  // entries before the offending one.
  //
  // The load is not logged: its entries go into new pages below a new root, which then takes
  // over the root swip, and make_durable() runs (a checkpoint, whose saved catalog switches to
  // the new root: a crash before leaves the empty tree whole, and restart gives back the new
  // pages). Only then is the old root, an empty leaf, freed.
  template <typename Generate>
  void bulk_load(std::size_t count, Generate&& generate, double fill_factor) {
    bulk_load(count, generate, fill_factor, [] {});
  }
  template <typename Generate, typename MakeDurable>
  void bulk_load(std::size_t count, Generate&& generate, double fill_factor,
                 MakeDurable&& make_durable) {
    if (!(fill_factor > 0.0 && fill_factor <= 1.0))
      fail("bulk_load: fill factor {} is outside (0, 1]", fill_factor);
    Guard old_root = access_.fix(root_, nullptr);
    NodeHeader h = header(old_root);
    if (!h.is_leaf || h.count != 0) fail("bulk_load: the table is not empty");
    if (count == 0) return;
    BulkLoad<Generate> load{.generate = generate,
                            .count = count,
                            .per_leaf = std::max<std::size_t>(1, kLeafCapacity * fill_factor),
                            .fanout = std::max<std::size_t>(2, (kInnerCapacity + 1) * fill_factor),
                            .leaves = 0,
                            .next = 0,
                            .previous = std::nullopt};
    load.leaves = (count + load.per_leaf - 1) / load.per_leaf;
    std::uint32_t height = 0;
    for (std::size_t span = 1; span < load.leaves; span *= load.fanout) ++height;
    std::exception_ptr error;
    {
      Guard root = access_.allocate_page();
      try {
        build_subtree(load, root, height, 0, load.leaves);
      } catch (const Error&) {
        error = std::current_exception();
      }
      root_ = access_.swip_of(root);
    }
    make_durable();
    access_.free_page(std::move(old_root));
    if (error) std::rethrow_exception(error);
  }

  // Walks the whole tree (whole pages, one path of guards at a time).
  BTreeStats stats() {
    BTreeStats s;
    s.min_leaf_entries = UINT32_MAX;
    Guard root = access_.fix(root_, nullptr);
    collect_stats(root, 1, s);
    if (s.leaves == 0) s.min_leaf_entries = 0;
    return s;
  }

  // Checks order, separator bounds, node counts and equal leaf depth; returns the first
  // violation found, or an empty string.
  std::string validate() {
    Guard root = access_.fix(root_, nullptr);
    std::optional<std::uint32_t> leaf_depth;
    return validate_node(root, 1, std::nullopt, std::nullopt, leaf_depth);
  }

 private:
  static constexpr std::uint32_t kKeysPerLine =
      std::max<std::uint32_t>(1, kCacheLineSize / sizeof(K));

  template <typename T>
  static T load(const std::byte* p) {
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
  }
  // A node header is checked before the tree trusts its count (a page damaged on NVM or SSD
  // must give an Error, never a read past the page or a wild child).
  static NodeHeader header(Guard& g) {
    return checked(g, load<NodeHeader>(g.read(kNodeHeaderOffset, sizeof(NodeHeader))));
  }
  static NodeHeader checked(const Guard& g, const NodeHeader& h) {
    if (h.is_leaf > 1 || h.count > (h.is_leaf ? kLeafCapacity : kInnerCapacity)) [[unlikely]]
      fail_corrupt(g, fmt::format("node kind {} with {} keys", h.is_leaf, h.count));
    return h;
  }
  [[noreturn]] static void fail_corrupt(const Guard& g, const std::string& what) {
    fail("corrupt B-tree page {}: {}", g.page_id(), what);
  }
  // No tree of 16 KiB pages gets this deep; a longer path is a cycle of damaged pages.
  static constexpr std::uint32_t kMaxHeight = 64;
  static void check_depth(const Guard& g, std::uint32_t depth) {
    if (depth > kMaxHeight) [[unlikely]]
      fail_corrupt(g, fmt::format("a path of more than {} levels (a cycle)", kMaxHeight));
  }
  static void write_header(Guard& g, const NodeHeader& h) {
    std::memcpy(g.write(kNodeHeaderOffset, sizeof(NodeHeader)), &h, sizeof(NodeHeader));
  }
  static void set_count(Guard& g, std::uint32_t count) {
    auto c = static_cast<std::uint16_t>(count);
    std::memcpy(g.write(kNodeHeaderOffset + offsetof(NodeHeader, count), sizeof(c)), &c, sizeof(c));
  }
  static bool is_full(const NodeHeader& h) {
    return h.count >= (h.is_leaf ? kLeafCapacity : kInnerCapacity);
  }
  static K key_at(Guard& g, std::uint32_t i) {
    return load<K>(g.read(Leaf::key_offset(i), sizeof(K)));
  }
  // The swip lives in the page: fix may swizzle it in place (that does not dirty the page).
  static Swip& swip_at(Guard& g, std::uint32_t i) {
    return *as_swips(const_cast<std::byte*>(g.read(Inner::swip_offset(i), sizeof(Swip))));
  }
  static Swip* as_swips(std::byte* p) { return reinterpret_cast<Swip*>(p); }

  // Binary search over groups of kKeysPerLine keys (one cache line for 8-byte keys): each
  // probe reads the group around the middle and ends the search when the key falls inside it.
  struct Position {
    std::uint32_t index;  // first i with keys[i] >= key
    bool found;           // keys[index] == key
  };
  static Position search(Guard& g, std::uint32_t count, const K& key) {
    // The answer lies in [lo, hi]; keys[hi] > key whenever hi < count.
    std::uint32_t lo = 0, hi = count;
    while (hi - lo > kKeysPerLine) {
      std::uint32_t mid = lo + (hi - lo) / 2;
      std::uint32_t first = std::max(lo, mid / kKeysPerLine * kKeysPerLine);
      std::uint32_t last = std::min(hi, first + kKeysPerLine) - 1;
      const std::byte* p = g.read(Leaf::key_offset(first), (last - first + 1) * sizeof(K));
      if (load<K>(p + (last - first) * sizeof(K)) < key) {
        lo = last + 1;
        continue;
      }
      K first_key = load<K>(p);
      if (!(first_key < key)) {
        if (!(key < first_key)) return {first, true};
        hi = first;
        continue;
      }
      return scan_group(p + sizeof(K), first + 1, last + 1, key);
    }
    if (lo == hi) return {hi, false};
    return scan_group(g.read(Leaf::key_offset(lo), (hi - lo) * sizeof(K)), lo, hi, key);
  }
  // Keys [from, to) at p, the answer among them or `to` (then keys[to] > key).
  static Position scan_group(const std::byte* p, std::uint32_t from, std::uint32_t to,
                             const K& key) {
    for (std::uint32_t i = from; i < to; ++i, p += sizeof(K)) {
      K k = load<K>(p);
      if (!(k < key)) return {i, !(key < k)};
    }
    return {to, false};
  }
  // First i with keys[i] > key: the child that holds `key`. Probes key groups like search().
  static std::uint32_t upper_bound(Guard& g, std::uint32_t count, const K& key) {
    std::uint32_t lo = 0, hi = count;
    while (hi - lo > kKeysPerLine) {
      std::uint32_t mid = lo + (hi - lo) / 2;
      std::uint32_t first = std::max(lo, mid / kKeysPerLine * kKeysPerLine);
      std::uint32_t last = std::min(hi, first + kKeysPerLine) - 1;
      const std::byte* p = g.read(Inner::key_offset(first), (last - first + 1) * sizeof(K));
      if (!(key < load<K>(p + (last - first) * sizeof(K)))) {
        lo = last + 1;
      } else if (key < load<K>(p)) {
        hi = first;
      } else {
        // Bounded though keys[last] > key: a node read unlatched may change between the two
        // reads of keys[last] (a torn memmove of a split beside), and the loop must not leave
        // the group it read.
        lo = first + 1;
        for (p += sizeof(K); lo < last && !(key < load<K>(p)); p += sizeof(K)) ++lo;
        return lo;
      }
    }
    if (lo == hi) return lo;
    const std::byte* p = g.read(Inner::key_offset(lo), (hi - lo) * sizeof(K));
    for (; lo < hi; ++lo, p += sizeof(K))
      if (key < load<K>(p)) break;
    return lo;
  }

  // How a descent beside changes holds its leaf: latched shared to read, exclusive to change,
  // or not at all, for a read that validates instead (kOptimisticLeafReads).
  enum class LeafLatch : std::uint8_t { kShared, kExclusive, kNone };
  // An access whose leaves change beside readers that may read them unlatched, read_leaf
  // taking the read again until no change ran beside it (tiers/resident_writes.hpp).
  static constexpr bool kOptimisticLeafReads = requires(Access & access, Guard& leaf) {
    access.read_leaf(leaf, [] { return true; });
  };

  // With LeafLatch::kNone, count is left to the caller's validated read, and the structure
  // version the descent saw to its check afterwards (seen).
  Guard find_leaf(const K& key, std::uint32_t& count, LeafLatch latch = LeafLatch::kShared,
                  std::uint64_t* seen = nullptr) {
    assert(latch != LeafLatch::kNone || kOptimisticLeafReads);
    for (;;) {
      const std::uint64_t version = stable_structure();
      if (seen != nullptr) *seen = version;
      Guard node = access_.fix(root_, nullptr);
      for (std::uint32_t depth = 1;; check_depth(node, ++depth)) {
        if (latch == LeafLatch::kNone && is_leaf(node)) {
          count = 0;
          return node;
        }
        latch_if_leaf(node, latch);
        std::uint32_t i;
        {
          [[maybe_unused]] const RacingSplits racing(structure_ != nullptr);
          const NodeHeader h = header(node);
          if (h.is_leaf) {
            if (structure_moved(version)) [[unlikely]]
              break;
            count = h.count;
            return node;
          }
          i = upper_bound(node, h.count, key);
        }
        Guard child = access_.fix(swip_at(node, i), &node);
        if (structure_moved(version)) [[unlikely]]
          break;  // the child may not be the key's: from the root again
        node = std::move(child);
      }
    }
  }

  // Leaf splits beside changes (common/structure_version.hpp): an access that latches the parent
  // for one, allocates the new leaf latched, and moves swips a word at a time (a descent beside
  // reads each swip once, atomically, in fix).
  static constexpr bool kSplitsBeside = requires(Access & access, Guard& parent) {
    access.latch_parent(parent);
  };
  std::uint64_t stable_structure() const {
    return structure_ != nullptr ? structure_->stable() : 0;
  }
  bool structure_moved(std::uint64_t seen) const {
    return structure_ != nullptr && !structure_->unchanged_since(seen);
  }
  // An inner node's keys and count, read beside a split that may be writing them: what they
  // lead to is checked against the structure version before it is used, so ThreadSanitizer
  // is told to ignore them (common/ignoring_racing_reads.hpp).
  using RacingSplits = IgnoringRacingReadsIf;
  // The split's latch, let go when the split's scope ends (after its writes, or its Error).
  class SplitBeside {
   public:
    explicit SplitBeside(StructureVersion& structure) : structure_(structure) {}
    ~SplitBeside() { structure_.end_split(); }
    SplitBeside(const SplitBeside&) = delete;
    SplitBeside& operator=(const SplitBeside&) = delete;

   private:
    StructureVersion& structure_;
  };

  // An insert into a full leaf beside changes: the leaf splits there, under the structure
  // version's latch, when its parent has room (a full parent, a leaf that is the root, or a
  // split already under way beside: the exclusive latch's, as before).
  //   1. Descend, noting the parent and the leaf's swip in it; latch the leaf; check the version.
  //   2. Still full (a remove beside may have made room), the parent not full: take the latch,
  //      from the version seen (so the parent is as read), and latch the parent.
  //   3. Split (the new leaf is latched by its allocation), insert into the half the key goes to.
  bool insert_splitting_leaf_beside(const K& key, const V& value) {
    for (;;) {
      // 1.
      const std::uint64_t seen = structure_->stable();
      Guard parent;
      bool has_parent = false;  // a leaf that is the root has none
      std::uint32_t i = 0;
      std::uint32_t parent_count = 0;
      Guard leaf = access_.fix(root_, nullptr);
      bool moved = false;
      for (std::uint32_t depth = 1; !is_leaf(leaf); check_depth(leaf, ++depth)) {
        {
          [[maybe_unused]] const RacingSplits racing(structure_ != nullptr);
          parent_count = header(leaf).count;
          i = upper_bound(leaf, parent_count, key);
        }
        Guard child = access_.fix(swip_at(leaf, i), &leaf);
        if ((moved = structure_moved(seen))) break;
        parent = std::move(leaf);
        has_parent = true;
        leaf = std::move(child);
      }
      if (moved) continue;
      latch_if_leaf(leaf, LeafLatch::kExclusive);
      if (structure_moved(seen)) continue;
      // 2.
      const std::uint32_t count = header(leaf).count;
      const Position at = search(leaf, count, key);
      if (at.found) return false;
      if (count < kLeafCapacity) {
        insert_into_leaf(leaf, count, at.index, key, value);
        return true;
      }
      if (!has_parent || parent_count >= kInnerCapacity) structure_change();
      if (!structure_->try_begin_split(seen)) continue;
      const SplitBeside splitting(*structure_);
      access_.latch_parent(parent);
      // 3. The new leaf is taken as allocated, still latched (not fixed again: a logging access
      //    keeps every page it wrote latched until the operation's record is written).
      Guard right = split_child(parent, parent_count, i, leaf, key);
      Guard& into = key < key_at(parent, i) ? leaf : right;
      const std::uint32_t into_count = header(into).count;
      insert_into_leaf(into, into_count, search(into, into_count, key).index, key, value);
      access_.add_split_beside();
      return true;
    }
  }

  // An access that changes leaves beside other threads (tiers/resident_writes.hpp) latches
  // leaves only, shared, or exclusive for a change: an inner node changes only in a leaf split
  // beside (kSplitsBeside), which descents check for. A leaf is told by its is_leaf byte,
  // which no change of an entry writes.
  void latch_if_leaf(Guard& node, LeafLatch latch) {
    if constexpr (requires { access_.latch_leaf(node, true); }) {
      if (latch != LeafLatch::kNone && is_leaf(node))
        access_.latch_leaf(node, latch == LeafLatch::kExclusive);
    }
  }
  static bool is_leaf(Guard& node) {
    std::uint8_t leaf;
    std::memcpy(&leaf, node.read(kNodeHeaderOffset + offsetof(NodeHeader, is_leaf), 1), 1);
    return leaf != 0;
  }
  // The leaf a change of one entry goes to.
  Guard find_leaf_to_change(const K& key, std::uint32_t& count) {
    return find_leaf(key, count, LeafLatch::kExclusive);
  }
  // Such an access leaves splits and merges to others (it throws).
  void structure_change() {
    if constexpr (requires { access_.refuse_structure_change(); })
      access_.refuse_structure_change();
  }
  // Its removes: all but one after which the exclusive remove would merge the leaf (an
  // underfull inner node on the way waits for a later remove that descends exclusively). A
  // remove that leaves its leaf under a quarter full lets the leaf go and looks at the
  // neighbours first (leaf_merge_would_fit): where neither would take the leaf's entries, the
  // exclusive remove would merge nothing either, and it removes here, from the same count.
  // Without the look, a queue-like table (inserts at its tail, removes at its head: TPC-C's
  // new_order) ran a quarter of every drained leaf's removes exclusively, between full leaves.
  // What the look saw may change before the remove: then the leaf is looked at again, up to
  // kMergeLooks times; a neighbour that shrinks afterwards leaves the leaf underfull until a
  // later remove from it, as the underflow policy allows.
  static constexpr unsigned kMergeLooks = 4;
  bool remove_without_merge(const K& key) {
    std::optional<std::uint32_t> looked;  // the leaf's count after the remove, merging nothing
    for (unsigned looks = 0;; ++looks) {
      std::uint32_t after;
      {
        std::uint32_t count;
        Guard leaf = find_leaf_to_change(key, count);
        Position at = search(leaf, count, key);
        if (!at.found) return false;
        after = count - 1u;
        if (after >= kLeafUnderfull || looked == after) {
          erase_from_leaf(leaf, count, at.index, key);
          return true;
        }
      }
      if (looks == kMergeLooks || leaf_merge_would_fit(key, after)) structure_change();
      looked = after;
    }
  }
  // Whether merge_if_fits would merge the leaf `key` belongs in, holding `count` entries, with
  // a neighbour: read beside changes, with no latch held meanwhile but the one a neighbour's
  // count is read under. A tree whose structure moved meanwhile answers yes (ask exclusively).
  bool leaf_merge_would_fit(const K& key, std::uint32_t count) {
    const std::uint64_t seen = stable_structure();
    Guard parent = access_.fix(root_, nullptr);
    if (is_leaf(parent)) return false;  // the root: nothing to merge with
    for (std::uint32_t depth = 1;; check_depth(parent, ++depth)) {
      std::uint32_t parent_count, i;
      {
        [[maybe_unused]] const RacingSplits racing(structure_ != nullptr);
        parent_count = header(parent).count;
        i = upper_bound(parent, parent_count, key);
      }
      {
        Guard child = access_.fix(swip_at(parent, i), &parent);
        if (structure_moved(seen)) return true;
        if (!is_leaf(child)) {
          parent = std::move(child);
          continue;
        }
      }
      const std::uint32_t limit = count == 0 ? kLeafCapacity : kLeafMergeLimit;
      for (std::uint32_t neighbour : {i + 1, i - 1}) {
        if (neighbour > parent_count) continue;  // also catches i - 1 wrapping below 0
        Guard sibling = access_.fix(swip_at(parent, neighbour), &parent);
        const std::uint32_t sibling_count = leaf_count_beside(sibling);
        if (structure_moved(seen) || count + sibling_count <= limit) return true;
      }
      return false;
    }
  }
  // A leaf's count beside changes: read optimistically, or under its shared latch.
  std::uint32_t leaf_count_beside(Guard& leaf) {
    if constexpr (kOptimisticLeafReads) {
      return access_.read_leaf(leaf, [&] { return std::uint32_t{header(leaf).count}; });
    } else {
      latch_if_leaf(leaf, LeafLatch::kShared);
      return header(leaf).count;
    }
  }

  // Every change of a leaf entry goes through a LeafChange (btree/leaf_change.hpp): a guard
  // that logs takes it whole (change_leaf), and restart replays the same bytes without the
  // table's types. The leaf's layout is LeafGeometry's, as the static_assert below keeps it.
  static void change_leaf(Guard& leaf, const LeafChange& change, const K& key, const void* bytes) {
    const auto* key_bytes = reinterpret_cast<const std::byte*>(&key);
    const auto* value_bytes = static_cast<const std::byte*>(bytes);
    if constexpr (requires { leaf.change_leaf(change, key_bytes, value_bytes); })
      leaf.change_leaf(change, key_bytes, value_bytes);
    else
      apply_leaf_change(leaf, change, key_bytes, value_bytes);
  }
  static LeafChange entry_change(LeafChangeKind kind, std::uint32_t i) {
    return {.kind = kind,
            .flags = 0,
            .index = static_cast<std::uint16_t>(i),
            .key_size = sizeof(K),
            .part_offset = 0,
            .value_size = sizeof(V),
            .bytes_size = kind == LeafChangeKind::kInsert ? std::uint32_t{sizeof(V)} : 0};
  }

  static void insert_into_leaf(Guard& leaf, std::uint32_t, std::uint32_t i, const K& key,
                               const V& value) {
    change_leaf(leaf, entry_change(LeafChangeKind::kInsert, i), key, &value);
  }

  static void erase_from_leaf(Guard& leaf, std::uint32_t, std::uint32_t i, const K& key) {
    change_leaf(leaf, entry_change(LeafChangeKind::kRemove, i), key, nullptr);
  }

  // Puts `key` at i and `child` at i + 1 of a non-full inner node.
  void insert_into_inner(Guard& node, std::uint32_t count, std::uint32_t i, const K& key,
                         Swip child) {
    std::byte* keys = node.write(Inner::key_offset(i), (count - i + 1) * sizeof(K));
    std::memmove(keys + sizeof(K), keys, (count - i) * sizeof(K));
    std::memcpy(keys, &key, sizeof(K));
    if (count > i) {
      Swip* from = as_swips(node.write(Inner::swip_offset(i + 1), (count - i + 1) * sizeof(Swip)));
      access_.move_swips(node, Inner::swip_offset(i + 2), &node, from, count - i);
    }
    store_swip(node, Inner::swip_offset(i + 1), child);
    set_count(node, count + 1);
  }
  // One store: a descent beside a leaf split reads the swip once, whole (kSplitsBeside). An
  // access whose misses swizzle swips beside the split stores it itself (store_swip).
  void store_swip(Guard& node, std::uint32_t offset, Swip swip) {
    if constexpr (requires { access_.store_swip(node, offset, swip); })
      access_.store_swip(node, offset, swip);
    else
      Swip::store(*as_swips(node.write(offset, sizeof(Swip))), swip);
  }

  // All of `node` loaded where its lines would load at their first write (3tier's mini pages
  // and cache lines), so that a load that fails (its eviction's write-back) fails before a
  // change that writes it and other nodes begins. Elsewhere nodes are whole when fixed.
  static void make_whole(Guard& node) {
    if constexpr (requires { node.make_whole(); }) node.make_whole();
  }

  // Removes key i and swip i + 1 of an inner node.
  void erase_from_inner(Guard& node, std::uint32_t count, std::uint32_t i) {
    std::byte* keys = node.write(Inner::key_offset(i), (count - i) * sizeof(K));
    std::memmove(keys, keys + sizeof(K), (count - i - 1) * sizeof(K));
    if (count > i + 1) {
      Swip* from = as_swips(node.write(Inner::swip_offset(i + 1), (count - i) * sizeof(Swip)));
      access_.move_swips(node, Inner::swip_offset(i + 1), &node, from + 1, count - i - 1);
    }
    set_count(node, count - 1);
  }

  // Splits the full `child` (swip i of the non-full `parent`): its upper half moves to a new
  // right sibling, which is returned (latched, where the access latches new pages). `child`
  // keeps the lower half.
  // A leaf splits at its middle, or where `key` goes when that is in its upper quarter: keys
  // that arrive in ascending order (an append, or one of several ascending runs side by side,
  // like TPC-C's districts) then fill the left leaf and start a new one nearly empty, instead
  // of moving half a leaf at every split (pages filled full, and far less logged).
  Guard split_child(Guard& parent, std::uint32_t parent_count, std::uint32_t i, Guard& child,
                    const K& key) {
    // 1. The child whole and checked, the parent whole, then the sibling allocated: if any of
    //    them fails, nothing has changed. (A sibling allocated before a failure would be in no
    //    tree, for good once a checkpoint wrote it: a split beside changes whose child is not
    //    whole in DRAM runs again exclusively, and allocated another. A parent whose lines
    //    loaded at its write, last, could fail there with the child already halved.)
    std::byte* left = child.whole_page();
    NodeHeader h = checked(child, load<NodeHeader>(left + kNodeHeaderOffset));
    make_whole(parent);
    Guard sibling = access_.allocate_page();
    // 2. Move the upper part.
    std::byte* right = sibling.whole_page();
    std::uint32_t keep = h.count / 2;
    if (h.is_leaf) {
      const std::uint32_t at = search(child, h.count, key).index;
      if (at >= h.count - h.count / 4u) keep = at;
    }
    K separator = keep < h.count ? load<K>(left + Leaf::key_offset(keep)) : key;
    NodeHeader right_header{.count = 0, .is_leaf = h.is_leaf, .reserved = {}};
    if (h.is_leaf) {
      right_header.count = static_cast<std::uint16_t>(h.count - keep);
      std::memcpy(right + Leaf::key_offset(0), left + Leaf::key_offset(keep),
                  right_header.count * sizeof(K));
      std::memcpy(right + Leaf::value_offset(0), left + Leaf::value_offset(keep),
                  right_header.count * sizeof(V));
      if (right_header.count > 0) {
        sibling.mark_dirty(Leaf::key_offset(0), right_header.count * sizeof(K));
        sibling.mark_dirty(Leaf::value_offset(0), right_header.count * sizeof(V));
      }
    } else {
      // The separator moves up; keys keep+1.. and swips keep+1.. move right.
      right_header.count = static_cast<std::uint16_t>(h.count - keep - 1);
      std::memcpy(right + Inner::key_offset(0), left + Inner::key_offset(keep + 1),
                  right_header.count * sizeof(K));
      sibling.mark_dirty(Inner::key_offset(0), right_header.count * sizeof(K));
      access_.move_swips(sibling, Inner::swip_offset(0), &child,
                         as_swips(left + Inner::swip_offset(keep + 1)), right_header.count + 1u);
    }
    write_header(sibling, right_header);
    set_count(child, keep);
    // 3. Link the sibling.
    insert_into_inner(parent, parent_count, i, separator, access_.swip_of(sibling));
    return sibling;
  }

  // The root is full: a new root above it takes over the root swip, then the old root splits.
  Guard grow_root(Guard& old_root, const K& key) {
    Guard new_root = access_.allocate_page();
    write_header(new_root, NodeHeader{.count = 0, .is_leaf = 0, .reserved = {}});
    access_.move_swips(new_root, Inner::swip_offset(0), nullptr, &root_, 1);
    root_ = access_.swip_of(new_root);
    split_child(new_root, 0, 0, old_root, key);
    return new_root;
  }

  // Descends splitting every full node on the way, so the leaf has room.
  bool insert_with_splits(const K& key, const V& value) {
    structure_change();
    Guard node = access_.fix(root_, nullptr);
    if (is_full(header(node))) {
      Guard new_root = grow_root(node, key);
      node = std::move(new_root);
    }
    for (std::uint32_t depth = 1;; check_depth(node, ++depth)) {
      NodeHeader h = header(node);
      if (h.is_leaf) {
        Position at = search(node, h.count, key);
        if (at.found) return false;
        insert_into_leaf(node, h.count, at.index, key, value);
        return true;
      }
      std::uint32_t i = upper_bound(node, h.count, key);
      Guard child = access_.fix(swip_at(node, i), &node);
      if (is_full(header(child))) {
        split_child(node, h.count, i, child, key);
        if (!(key < key_at(node, i))) {
          Guard right = access_.fix(swip_at(node, i + 1), &node);
          child = std::move(right);
        }
      }
      node = std::move(child);
    }
  }

  bool remove_with_merges(const K& key) {
    structure_change();
    Guard node = access_.fix(root_, nullptr);
    std::optional<Guard> parent;
    std::uint32_t index_in_parent = 0;
    for (std::uint32_t depth = 1;; check_depth(node, ++depth)) {
      NodeHeader h = header(node);
      if (h.is_leaf) {
        Position at = search(node, h.count, key);
        if (!at.found) return false;
        erase_from_leaf(node, h.count, at.index, key);
        if (parent && h.count - 1u < kLeafUnderfull)
          merge_if_fits(*parent, index_in_parent, std::move(node));
        return true;
      }
      parent.reset();
      std::uint32_t i = upper_bound(node, h.count, key);
      Guard child = access_.fix(swip_at(node, i), &node);
      NodeHeader ch = header(child);
      if (!ch.is_leaf && ch.count < kInnerUnderfull) {
        Guard merged = merge_if_fits(node, i, std::move(child));
        child = std::move(merged);
        i = upper_bound(node, header(node).count, key);
      }
      parent = std::move(node);
      node = std::move(child);
      index_in_parent = i;
    }
  }

  // `child` (swip i of `parent`) is underfull: merges it with the right neighbour, else the
  // left one, when the result is at most three quarters full (or fits at all, for an empty
  // child). Returns the guard of the node now holding child's entries.
  Guard merge_if_fits(Guard& parent, std::uint32_t i, Guard child) {
    std::uint32_t parent_count = header(parent).count;
    NodeHeader ch = header(child);
    for (std::uint32_t neighbour : {i + 1, i - 1}) {
      if (neighbour > parent_count) continue;  // also catches i - 1 wrapping below 0
      Guard sibling = access_.fix(swip_at(parent, neighbour), &parent);
      NodeHeader sh = header(sibling);
      std::uint32_t merged = ch.is_leaf ? ch.count + sh.count : ch.count + 1u + sh.count;
      std::uint32_t limit = ch.is_leaf ? kLeafMergeLimit : kInnerMergeLimit;
      if (ch.count == 0) limit = ch.is_leaf ? kLeafCapacity : kInnerCapacity;
      if (merged > limit) continue;
      if (neighbour > i) {
        merge(parent, parent_count, i, child, std::move(sibling));
        return child;
      }
      merge(parent, parent_count, neighbour, sibling, std::move(child));
      return sibling;
    }
    return child;
  }

  // Appends `right` (swip l + 1) to `left` (swip l), frees `right`, unlinks it from `parent`.
  void merge(Guard& parent, std::uint32_t parent_count, std::uint32_t l, Guard& left, Guard right) {
    // All three whole before anything changes, as in split_child.
    std::byte* lp = left.whole_page();
    std::byte* rp = right.whole_page();
    make_whole(parent);
    NodeHeader lh = checked(left, load<NodeHeader>(lp + kNodeHeaderOffset));
    NodeHeader rh = checked(right, load<NodeHeader>(rp + kNodeHeaderOffset));
    std::uint32_t merged;
    if (lh.is_leaf) {
      std::memcpy(lp + Leaf::key_offset(lh.count), rp + Leaf::key_offset(0), rh.count * sizeof(K));
      std::memcpy(lp + Leaf::value_offset(lh.count), rp + Leaf::value_offset(0),
                  rh.count * sizeof(V));
      if (rh.count > 0) {  // an empty right leaf (a split at its end) brings nothing
        left.mark_dirty(Leaf::key_offset(lh.count), rh.count * sizeof(K));
        left.mark_dirty(Leaf::value_offset(lh.count), rh.count * sizeof(V));
      }
      merged = lh.count + rh.count;
    } else {
      // The separator comes down between the two key arrays.
      K separator = key_at(parent, l);
      std::memcpy(lp + Inner::key_offset(lh.count), &separator, sizeof(K));
      std::memcpy(lp + Inner::key_offset(lh.count + 1), rp + Inner::key_offset(0),
                  rh.count * sizeof(K));
      left.mark_dirty(Inner::key_offset(lh.count), (rh.count + 1) * sizeof(K));
      access_.move_swips(left, Inner::swip_offset(lh.count + 1), &right,
                         as_swips(rp + Inner::swip_offset(0)), rh.count + 1u);
      merged = lh.count + 1 + rh.count;
    }
    set_count(left, merged);
    // Free while right's swip is still in place, then close the gap.
    access_.free_page(std::move(right));
    erase_from_inner(parent, parent_count, l);
  }

  // A root inner node without keys takes over its only child's content.
  void collapse_root() {
    Guard root = access_.fix(root_, nullptr);
    for (NodeHeader h = header(root); !h.is_leaf && h.count == 0;) {
      Guard child = access_.fix(swip_at(root, 0), &root);
      NodeHeader ch = header(child);
      // A full child would need the parking slot (only after a failed root split): keep it.
      if (!ch.is_leaf && ch.count >= kInnerCapacity) return;
      absorb_only_child(root, std::move(child), ch);
      h = ch;
    }
  }

  void absorb_only_child(Guard& root, Guard child, const NodeHeader& ch) {
    // Both whole before anything changes, as in split_child.
    std::byte* cp = child.whole_page();
    make_whole(root);
    if (ch.is_leaf) {
      // Leaves hold no swips: copy out, free the child (its swip still in place), copy in.
      std::unique_ptr<std::byte[]> image(new std::byte[kPageSize - kNodeHeaderOffset]);
      std::memcpy(image.get(), cp + kNodeHeaderOffset, kPageSize - kNodeHeaderOffset);
      access_.free_page(std::move(child));
      std::memcpy(root.whole_page() + kNodeHeaderOffset, image.get(),
                  kPageSize - kNodeHeaderOffset);
      root.mark_dirty(kNodeHeaderOffset, kPageSize - kNodeHeaderOffset);
      return;
    }
    // 1. Park the child's swip in the last slot, out of the way of the grandchildren.
    Swip* first = as_swips(root.write(Inner::swip_offset(0), sizeof(Swip)));
    access_.move_swips(root, Inner::swip_offset(kInnerCapacity), &root, first, 1);
    // 2. Take over keys and grandchildren.
    std::memcpy(root.write(Inner::key_offset(0), ch.count * sizeof(K)), cp + Inner::key_offset(0),
                ch.count * sizeof(K));
    access_.move_swips(root, Inner::swip_offset(0), &child, as_swips(cp + Inner::swip_offset(0)),
                       ch.count + 1u);
    set_count(root, ch.count);
    // 3. The child's swip is still parked in place: free it.
    access_.free_page(std::move(child));
  }

  template <typename Generate>
  struct BulkLoad {
    Generate& generate;
    std::size_t count;
    std::size_t per_leaf;
    std::size_t fanout;
    std::size_t leaves = 0;
    std::size_t next = 0;  // next entry index
    std::optional<K> previous;
  };

  // Fills `node` as the root of a subtree of `level` levels above its leaves, holding leaves
  // [first_leaf, first_leaf + leaves). Returns the subtree's smallest key.
  template <typename Generate>
  K build_subtree(BulkLoad<Generate>& load, Guard& node, std::uint32_t level,
                  std::size_t first_leaf, std::size_t leaves) {
    if (level == 0) return fill_leaf(load, node, first_leaf);
    write_header(node, NodeHeader{.count = 0, .is_leaf = 0, .reserved = {}});
    std::size_t child_span = 1;
    for (std::uint32_t l = 1; l < level; ++l) child_span *= load.fanout;
    std::size_t children = (leaves + child_span - 1) / child_span;
    K smallest{};
    std::size_t leaf = first_leaf;
    for (std::size_t c = 0; c < children; ++c) {
      std::size_t child_leaves = leaves / children + (c < leaves % children ? 1 : 0);
      Guard child = access_.allocate_page();
      Swip swip = access_.swip_of(child);
      std::memcpy(node.write(Inner::swip_offset(static_cast<std::uint32_t>(c)), sizeof(Swip)),
                  &swip, sizeof(Swip));
      K child_smallest = build_subtree(load, child, level - 1, leaf, child_leaves);
      leaf += child_leaves;
      if (c == 0) {
        smallest = child_smallest;
      } else {
        std::memcpy(node.write(Inner::key_offset(static_cast<std::uint32_t>(c - 1)), sizeof(K)),
                    &child_smallest, sizeof(K));
        set_count(node, static_cast<std::uint32_t>(c));
      }
    }
    return smallest;
  }

  template <typename Generate>
  K fill_leaf(BulkLoad<Generate>& load, Guard& leaf, std::size_t leaf_index) {
    std::size_t n = load.count / load.leaves + (leaf_index < load.count % load.leaves ? 1 : 0);
    write_header(leaf, NodeHeader{.count = 0, .is_leaf = 1, .reserved = {}});
    std::byte* page = leaf.whole_page();
    K smallest{};
    std::uint32_t e = 0;
    // Counts what was written even when the generator fails, so the leaf stays valid.
    auto finish = [&] {
      leaf.mark_dirty(Leaf::key_offset(0), e * sizeof(K));
      leaf.mark_dirty(Leaf::value_offset(0), e * sizeof(V));
      set_count(leaf, e);
    };
    for (; e < n; ++e, ++load.next) {
      K key;
      V value;
      load.generate(load.next, key, value);
      if (load.previous && !(*load.previous < key)) {
        finish();
        fail("bulk_load: keys are not strictly ascending at entry {}", load.next);
      }
      load.previous = key;
      if (e == 0) smallest = key;
      std::memcpy(page + Leaf::key_offset(e), &key, sizeof(K));
      std::memcpy(page + Leaf::value_offset(e), &value, sizeof(V));
    }
    finish();
    return smallest;
  }

  void collect_stats(Guard& node, std::uint32_t depth, BTreeStats& s) {
    NodeHeader h = checked(node, load<NodeHeader>(node.whole_page() + kNodeHeaderOffset));
    check_depth(node, depth);
    s.height = std::max(s.height, depth);
    if (h.is_leaf) {
      ++s.leaves;
      s.entries += h.count;
      s.min_leaf_entries = std::min<std::uint32_t>(s.min_leaf_entries, h.count);
      s.max_leaf_entries = std::max<std::uint32_t>(s.max_leaf_entries, h.count);
      return;
    }
    ++s.inner_nodes;
    for (std::uint32_t i = 0; i <= h.count; ++i) {
      Guard child = access_.fix(swip_at(node, i), &node);
      collect_stats(child, depth + 1, s);
    }
  }

  std::string validate_node(Guard& node, std::uint32_t depth, std::optional<K> low,
                            std::optional<K> high, std::optional<std::uint32_t>& leaf_depth) {
    const std::byte* page = node.whole_page();
    NodeHeader h = load<NodeHeader>(page + kNodeHeaderOffset);
    if (depth > kMaxHeight)
      return fmt::format("page {}: a path of more than {} levels (a cycle)", node.page_id(),
                         kMaxHeight);
    if (h.is_leaf > 1) return fmt::format("page {}: node kind {}", node.page_id(), h.is_leaf);
    std::uint32_t capacity = h.is_leaf ? kLeafCapacity : kInnerCapacity;
    if (h.count > capacity)
      return fmt::format("page {}: count {} above capacity {}", node.page_id(), h.count, capacity);
    for (std::uint32_t i = 0; i < h.count; ++i) {
      K k = load<K>(page + Leaf::key_offset(i));
      if (i > 0 && !(load<K>(page + Leaf::key_offset(i - 1)) < k))
        return fmt::format("page {}: keys {} and {} out of order", node.page_id(), i - 1, i);
      if ((low && k < *low) || (high && !(k < *high)))
        return fmt::format("page {}: key {} outside the parent's separators", node.page_id(), i);
    }
    if (h.is_leaf) {
      if (leaf_depth && *leaf_depth != depth)
        return fmt::format("page {}: leaf at depth {}, others at {}", node.page_id(), depth,
                           *leaf_depth);
      leaf_depth = depth;
      return {};
    }
    for (std::uint32_t i = 0; i <= h.count; ++i) {
      std::optional<K> child_low = i > 0 ? std::optional<K>(key_at(node, i - 1)) : low;
      std::optional<K> child_high = i < h.count ? std::optional<K>(key_at(node, i)) : high;
      Guard child = access_.fix(swip_at(node, i), &node);
      std::string problem = validate_node(child, depth + 1, child_low, child_high, leaf_depth);
      if (!problem.empty()) return problem;
    }
    return {};
  }

  Access& access_;
  Swip& root_;
  StructureVersion* structure_ = nullptr;  // beside changes where leaves split beside them
};

}  // namespace tristore
