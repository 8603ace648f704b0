#pragma once
// The one interface between the B-tree and storage (docs/design.md section 4). Every architecture
// provides a type modelling PageAccess; the B-tree is written once against it.
//
// Rules the B-tree follows, and every implementation may rely on:
//  - A page is reached only through a Guard, obtained from allocate_page() or fix(). A Guard
//    is move-only; while it lives, the page stays in DRAM (it is not evicted) and pointers
//    obtained from it stay readable.
//  - read(offset, length) returns a pointer to `length` contiguous bytes of page offset
//    `offset` (make_resident). Only those bytes may be read through it.
//  - write(offset, length) = read + mark_dirty: the returned bytes may be modified.
//  - whole_page() makes the whole page resident and returns its first byte; a caller that
//    modifies it calls mark_dirty for the bytes it changed (or mark_dirty(0, kPageSize)).
//  - A later read/write/whole_page on the same guard may return a different address (a mini
//    page was promoted); the older pointers may still be read but must not be written.
//  - Swips inside pages are moved only with move_swips, never with memcpy, so that the
//    back-references of swizzled children stay right. A swip outside any page (a table's
//    root) has parent == nullptr and must stay at a stable DRAM address.
//  - Bytes [0, kPageHeaderSize) of every page belong to the storage layer (common/page_format.hpp).
//  - Guards are move-constructible and move-assignable: the B-tree moves them down a path.
//  - The B-tree never asks for an empty range (length 0).
//  - Optional: guard.change_leaf(change, key, bytes) takes a leaf entry's change whole
//    (btree/leaf_change.hpp), as the logging decorator does to log it at tuple level; without
//    it the tree applies the change through read and write.
//  - Optional: access.store_swip(guard, offset, swip) stores the swip that links a new page
//    into its parent, as an access whose misses swizzle swips beside a split must serialise
//    it with them (tiers/resident_writes.hpp); without it the tree stores it through write.
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "common/types.hpp"
#include "tiers/swip.hpp"

namespace tristore {

template <typename Access>
concept PageAccess = requires(Access& access, typename Access::Guard& guard,
                              typename Access::Guard* parent, Swip& swip, Swip* swips,
                              std::uint32_t offset, std::uint32_t length) {
  // A new page: fully resident, dirty, zero-filled after its PageHeader.
  { access.allocate_page() } -> std::same_as<typename Access::Guard>;
  // The page that `swip` refers to; `parent` guards the page holding `swip` (nullptr: the
  // swip lives in DRAM metadata). May swizzle `swip`.
  { access.fix(swip, parent) } -> std::same_as<typename Access::Guard>;
  { guard.page_id() } -> std::same_as<PageId>;
  { guard.read(offset, length) } -> std::same_as<const std::byte*>;
  { guard.write(offset, length) } -> std::same_as<std::byte*>;
  { guard.whole_page() } -> std::same_as<std::byte*>;
  guard.mark_dirty(offset, length);
  // memmove of `length` swips from `swips` (in page `parent`, or DRAM metadata if nullptr)
  // to the swip array at `offset` in page `guard`; fixes swizzled children's back-references.
  access.move_swips(guard, offset, parent, swips, length);
  // The swip that refers to the guarded page, for a new parent (root split): stores it.
  { access.swip_of(guard) } -> std::same_as<Swip>;
  access.free_page(std::move(guard));
};

}  // namespace tristore
