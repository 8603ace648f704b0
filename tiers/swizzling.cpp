// BufferManager (tiers/buffer_manager.hpp): pointer swizzling. One owning swip per page; a
// swizzled child records where its swip lives, and its parent counts its swizzled children.
#include "tiers/buffer_manager.hpp"

#include <array>
#include <cstring>

namespace tristore {

Swip* BufferManager::owning_swip(FrameHeader* frame) const {
  assert(frame->has(frame_flag::kSwizzled));
  if (frame->has(frame_flag::kOwnerIsRoot)) return frame->owner.root_swip;
  return reinterpret_cast<Swip*>(frame->owner.parent->data + frame->swip_offset);
}

bool BufferManager::would_swizzle(const Swip& swip, const FrameHeader* child,
                                  FrameHeader* parent_frame) const {
  // Only one swip owns a page, and only a full frame (whose bytes never move) may hold a
  // swizzled swip: a mini page's children stay unswizzled until it is promoted.
  if (!swizzling_ || child->has(frame_flag::kSwizzled)) return false;
  if (parent_frame == nullptr) return true;
  const FullFrame* full = holding_full_frame(parent_frame);
  const auto* address = reinterpret_cast<const std::byte*>(&swip);
  return full != nullptr && address >= full->data &&
         address + sizeof(Swip) <= full->data + kPageSize;
}

void BufferManager::swizzle(Swip& swip, FrameHeader* child, FrameHeader* parent_frame) {
  if (!would_swizzle(swip, child, parent_frame)) return;
  if (parent_frame == nullptr) {
    child->owner.root_swip = &swip;
    child->set(frame_flag::kOwnerIsRoot);
  } else {
    FullFrame* full = holding_full_frame(parent_frame);
    child->owner.parent = full;
    child->swip_offset =
        static_cast<std::uint16_t>(reinterpret_cast<std::byte*>(&swip) - full->data);
    ++full->swizzled_children;
  }
  child->set(frame_flag::kSwizzled);
  Swip::store(swip, Swip::from_frame(child));
}

void BufferManager::unswizzle(FrameHeader* frame) {
  Swip* swip = owning_swip(frame);
  assert(swip->is_swizzled() && swip->frame<FrameHeader>() == frame);
  Swip::store(*swip,
              Swip::from_page_id(frame->page_id));  // restores the bytes the page had: not dirty
  if (!frame->has(frame_flag::kOwnerIsRoot)) --frame->owner.parent->swizzled_children;
  frame->owner.parent = nullptr;
  frame->clear(frame_flag::kSwizzled | frame_flag::kOwnerIsRoot);
}

void BufferManager::move_swips(Guard& destination, std::uint32_t offset, Guard* source_parent,
                               Swip* swips, std::uint32_t count) {
  (void)source_parent;  // the children's headers know their owners
  if (count == 0) return;
  // 1. Swips live only on full frames, whose bytes never move: promote a mini destination.
  //    This may evict; evictions unswizzle through the (stable) source locations first.
  FrameHeader* frame = destination.frame_;
  if (frame->is_mini())
    frame =
        &(as_mini(frame)->full != nullptr ? as_mini(frame)->full : promote(as_mini(frame)))->header;
  FullFrame* target = as_full(frame);
  const std::uint32_t bytes = count * static_cast<std::uint32_t>(sizeof(Swip));
  std::byte* out = make_resident(frame, offset, bytes);
  mark_dirty(frame, offset, bytes);
  // 2. Copy out (the ranges may overlap), retarget swizzled children, copy in.
  std::array<Swip, kPageSize / sizeof(Swip)> moved;
  std::memcpy(moved.data(), swips, bytes);
  // (All-zero bytes, e.g. the untouched tail of a swip array, are no pointer.)
  auto points_to_frame = [](Swip swip) { return swip.is_swizzled() && swip.raw() != 0; };
  for (std::uint32_t i = 0; i < count; ++i) {
    if (!points_to_frame(moved[i])) continue;
    FrameHeader* child = moved[i].frame<FrameHeader>();
    if (!child->has(frame_flag::kOwnerIsRoot)) --child->owner.parent->swizzled_children;
    child->owner.parent = target;
    child->swip_offset = static_cast<std::uint16_t>(offset + i * sizeof(Swip));
    child->clear(frame_flag::kOwnerIsRoot);
    ++target->swizzled_children;
  }
  std::memcpy(out, moved.data(), bytes);
  // 3. Vacated source swips must not keep a pointer that could leave DRAM: restore page ids.
  for (std::uint32_t i = 0; i < count; ++i) {
    auto* source = reinterpret_cast<std::byte*>(swips + i);
    if (!points_to_frame(moved[i]) || (source >= out && source < out + bytes)) continue;
    const Swip page_id = Swip::from_page_id(moved[i].frame<FrameHeader>()->page_id);
    std::memcpy(source, &page_id, sizeof(page_id));
  }
}

Swip BufferManager::swip_of(const Guard& guard) const {
  return Swip::from_page_id(guard.page_id());
}

}  // namespace tristore
