// BufferManager (tiers/buffer_manager.hpp): what a leaf split beside changes
// (btree/btree.hpp, tiers/resident_writes.hpp) asks of the buffer manager, under the miss
// latch while the other changes go on. Misses beside the split swizzle swips into its parent
// and evictions unswizzle them, reading the children's back-references (owner, swip_offset)
// and the parent's count of swizzled children, all under the miss latch: so the split moves
// the parent's swips, fixes those back-references and stores the new leaf's swip there too,
// each swip a word at a time (changes' descents read a swip once, whole). The parent's latch,
// held by the split, keeps out its write-back and its eviction, not those stores.
#include "tiers/buffer_manager.hpp"
#include "tiers/serving_miss.hpp"

namespace tristore {

FrameHeader* BufferManager::allocate_page_beside_changes() {
  const ServingMiss serving(*this, &BufferManager::changing_);
  // 1. A free frame (evicting ahead; none: RetryExclusively) and a page id.
  FullFrame* frame = make_page();
  // 2. Latched for the split before anything leads to it.
  latch_made_beside_changes(frame->header);
  page_table_.insert_or_assign(frame->header.page_id, &frame->header);
  return &frame->header;
}

void BufferManager::move_swips_beside_changes(FrameHeader* frame, std::uint32_t offset,
                                              const Swip* swips, std::uint32_t count) {
  FullFrame* target = as_full(frame);
  assert(data_if_whole(frame) != nullptr && "a split's parent is a whole full frame");
  const std::uint32_t bytes = count * static_cast<std::uint32_t>(sizeof(Swip));
  auto* to = reinterpret_cast<Swip*>(target->data + offset);
  // Only within the parent (BTree::insert_into_inner): the first source left behind holds a
  // copy of its swip until the caller stores the new leaf's swip over it (store_swip...). No
  // miss swizzles it meanwhile: none swizzles a swip in a frame latched exclusively
  // (fix_beside_changes), and the split holds its parent so from before it moves a swip until
  // its record is written. A swizzled copy is no owner: its child's eviction leaves it as it
  // is, and the frame is not reused before this change has left.
  assert(reinterpret_cast<const std::byte*>(swips) >= target->data &&
         reinterpret_cast<const std::byte*>(swips + count) <= target->data + kPageSize);
  const ServingMiss serving(*this, &BufferManager::changing_);
  // A swizzled child learns its new place (the same parent).
  Swip::move_within_page(to, swips, count, [&](std::uint32_t i, Swip swip) {
    if (!swip.is_swizzled() || swip.raw() == 0) return;
    FrameHeader* child = swip.frame<FrameHeader>();
    assert(!child->has(frame_flag::kOwnerIsRoot) && child->owner.parent == target);
    child->swip_offset = static_cast<std::uint16_t>(offset + i * sizeof(Swip));
  });
  mark_dirty(frame, offset, bytes);
}

void BufferManager::store_swip_beside_changes(FrameHeader* frame, std::uint32_t offset, Swip swip) {
  assert(data_if_whole(frame) != nullptr && !swip.is_swizzled());
  const ServingMiss serving(*this, &BufferManager::changing_);
  Swip::store(*reinterpret_cast<Swip*>(as_full(frame)->data + offset), swip);
  mark_dirty(frame, offset, sizeof(Swip));
}

}  // namespace tristore
