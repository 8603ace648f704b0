#pragma once
// One change to one leaf entry: the B-tree's own record of what it did, applied by the tree
// and replayed by restart's redo (physiological logging: one page, one slot, the entry's
// bytes). It names the slot by index and carries the key and value sizes, so replaying it
// needs neither the table's types nor its key order; it is replayed only onto the page as it
// was when the change was made (the page's LSN says so), where the index is still right.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "btree/node_layout.hpp"
#include "common/byte_range.hpp"
#include "common/error.hpp"

namespace tristore {

enum class LeafChangeKind : std::uint8_t { kInsert = 1, kRemove, kUpdate };

// As logged: this header, then key_size key bytes, then bytes_size value bytes (insert: the
// value; update: value bytes [part_offset, part_offset + bytes_size); remove: none).
struct LeafChange {
  LeafChangeKind kind;
  std::uint8_t flags;  // kLeafKeyElsewhere
  std::uint16_t index;
  std::uint16_t key_size;
  std::uint16_t part_offset;
  std::uint32_t value_size;
  std::uint32_t bytes_size;
};
static_assert(sizeof(LeafChange) == 16);
// The log left the key out (its record holds it once, for the undo); whoever replays the
// change puts it back first.
inline constexpr std::uint8_t kLeafKeyElsewhere = 1;

// A leaf's geometry from its key and value sizes (LeafLayout<K, V> at run time).
struct LeafGeometry {
  std::uint32_t key_size;
  std::uint32_t value_size;
  std::uint32_t capacity;
  std::uint32_t values_offset;

  [[gnu::always_inline]] static constexpr LeafGeometry of(std::uint32_t key_size,
                                                          std::uint32_t value_size) {
    const std::uint32_t capacity = node_capacity(key_size, value_size, 0);
    return {key_size, value_size, capacity,
            align_to_line(kNodeKeysOffset + std::uint64_t{capacity} * key_size)};
  }
  constexpr std::uint32_t key_offset(std::uint32_t i) const {
    return kNodeKeysOffset + i * key_size;
  }
  constexpr std::uint32_t value_offset(std::uint32_t i) const {
    return values_offset + i * value_size;
  }
};

// The runs of bytes `change` writes into a leaf of `count` entries, at most three: an insert
// or a remove the keys and the values it shifts and the count, an update its value part. None
// for a change that does not fit the leaf (apply_leaf_change refuses it).
struct LeafChangeWrites {
  std::array<ByteRange, 3> ranges;
  std::size_t size = 0;
  std::span<const ByteRange> all() const { return {ranges.data(), size}; }
};
inline LeafChangeWrites leaf_change_writes(const LeafGeometry& leaf, const LeafChange& change,
                                           std::uint32_t count) {
  LeafChangeWrites writes;
  auto add = [&](std::uint32_t offset, std::uint32_t length) {
    if (length > 0) writes.ranges[writes.size++] = {offset, length};
  };
  const std::uint32_t i = change.index;
  if (count > leaf.capacity) return writes;
  switch (change.kind) {
    case LeafChangeKind::kUpdate:
      if (i < count && std::uint64_t{change.part_offset} + change.bytes_size <= change.value_size)
        add(leaf.value_offset(i) + change.part_offset, change.bytes_size);
      return writes;
    case LeafChangeKind::kInsert:
    case LeafChangeKind::kRemove: {
      if (change.kind == LeafChangeKind::kInsert ? i > count || count == leaf.capacity : i >= count)
        return writes;
      // An insert writes entry i and shifts those after it right; a remove shifts those after
      // i left onto it (the last entry's remove writes none).
      const std::uint32_t entries = change.kind == LeafChangeKind::kInsert ? count - i + 1
                                    : count - i > 1                        ? count - i
                                                                           : 0;
      add(leaf.key_offset(i), entries * leaf.key_size);
      add(leaf.value_offset(i), entries * leaf.value_size);
      add(kNodeHeaderOffset + offsetof(NodeHeader, count), sizeof(NodeHeader::count));
      return writes;
    }
    default:
      return writes;
  }
}

// A guard that may hold only some of the page's lines (tiers/resident_writes.hpp) is asked for
// every run a leaf change will write before anything of the change is written or logged, so
// it never fails halfway through; other guards have everything.
template <typename Page>
constexpr bool kClaimsWrites = requires(Page& page, std::span<const ByteRange> runs) {
  page.claim_writes(runs);
};
// The claim of a change already checked against a leaf of `count` entries.
template <typename Page>
void claim_leaf_change_writes(Page& page, const LeafGeometry& leaf, const LeafChange& change,
                              std::uint32_t count) {
  if constexpr (kClaimsWrites<Page>)
    page.claim_writes(leaf_change_writes(leaf, change, count).all());
}
// The claim of a change not yet checked (a change that does not fit claims nothing: applying
// it fails before any write).
template <typename Page>
void claim_leaf_change_writes(Page& page, const LeafChange& change) {
  if constexpr (kClaimsWrites<Page>) {
    if (change.key_size == 0 || change.value_size == 0 ||
        std::uint64_t{change.key_size} + change.value_size > kPageSize)
      return;
    NodeHeader header;
    std::memcpy(&header, page.read(kNodeHeaderOffset, sizeof(header)), sizeof(header));
    claim_leaf_change_writes(page, LeafGeometry::of(change.key_size, change.value_size), change,
                             header.count);
  }
}

// Applies `change` to the leaf behind `page` (any guard with read and write), as the tree does
// and as redo replays it: an insert shifts the entries from its index right, a remove shifts
// them left, an update writes the value part. A change that cannot belong to this page (a
// corrupt log or page) is an Error, not a write out of bounds; one that fits has its runs
// claimed (claim_leaf_change_writes) before its first write.
template <typename Page>
void apply_leaf_change(Page& page, const LeafChange& change, const std::byte* key,
                       const std::byte* bytes) {
  if (change.key_size == 0 || change.value_size == 0 ||
      std::uint64_t{change.key_size} + change.value_size > kPageSize)
    fail("leaf change with a {}-byte key and a {}-byte value", change.key_size, change.value_size);
  const LeafGeometry leaf = LeafGeometry::of(change.key_size, change.value_size);
  NodeHeader header;
  std::memcpy(&header, page.read(kNodeHeaderOffset, sizeof(header)), sizeof(header));
  const std::uint32_t count = header.count;
  const std::uint32_t i = change.index;
  auto shift = [&](std::uint32_t offset_of_i, std::uint32_t size, std::uint32_t entries,
                   bool right) {
    if (entries == 0) return;
    std::byte* at = page.write(offset_of_i, (entries + 1) * size);
    if (right)
      std::memmove(at + size, at, std::size_t{entries} * size);
    else
      std::memmove(at, at + size, std::size_t{entries} * size);
  };
  // Each kind: checked against the leaf, its runs claimed, then written.
  switch (change.kind) {
    case LeafChangeKind::kInsert: {
      if (header.is_leaf != 1 || count >= leaf.capacity || i > count ||
          change.bytes_size != change.value_size || bytes == nullptr)
        fail("leaf change: insert at {} into a node of kind {} with {} of {} entries", i,
             header.is_leaf, count, leaf.capacity);
      claim_leaf_change_writes(page, leaf, change, count);
      shift(leaf.key_offset(i), leaf.key_size, count - i, true);
      std::memcpy(page.write(leaf.key_offset(i), leaf.key_size), key, leaf.key_size);
      shift(leaf.value_offset(i), leaf.value_size, count - i, true);
      std::memcpy(page.write(leaf.value_offset(i), leaf.value_size), bytes, leaf.value_size);
      header.count = static_cast<std::uint16_t>(count + 1);
      break;
    }
    case LeafChangeKind::kRemove: {
      if (header.is_leaf != 1 || i >= count || change.bytes_size != 0)
        fail("leaf change: remove at {} from a node of kind {} with {} entries", i, header.is_leaf,
             count);
      claim_leaf_change_writes(page, leaf, change, count);
      shift(leaf.key_offset(i), leaf.key_size, count - i - 1, false);
      shift(leaf.value_offset(i), leaf.value_size, count - i - 1, false);
      header.count = static_cast<std::uint16_t>(count - 1);
      break;
    }
    case LeafChangeKind::kUpdate: {
      if (header.is_leaf != 1 || i >= count ||
          std::uint64_t{change.part_offset} + change.bytes_size > change.value_size)
        fail(
            "leaf change: update of {} bytes at {} of entry {} in a node of kind {} with {} "
            "entries",
            change.bytes_size, change.part_offset, i, header.is_leaf, count);
      claim_leaf_change_writes(page, leaf, change, count);
      if (change.bytes_size == 0) return;
      if (bytes == nullptr)
        fail("leaf change: an update of {} bytes with none given", change.bytes_size);
      std::memcpy(page.write(leaf.value_offset(i) + change.part_offset, change.bytes_size), bytes,
                  change.bytes_size);
      return;
    }
    default:
      fail("leaf change of unknown kind {}", static_cast<int>(change.kind));
  }
  std::memcpy(page.write(kNodeHeaderOffset + offsetof(NodeHeader, count), sizeof(header.count)),
              &header.count, sizeof(header.count));
}

// The bytes that follow a LeafChange in the log.
inline std::uint64_t leaf_change_payload_size(const LeafChange& change) {
  return ((change.flags & kLeafKeyElsewhere) != 0 ? 0 : std::uint64_t{change.key_size}) +
         change.bytes_size;
}

}  // namespace tristore
