#include "tiers/frame_pool.hpp"

#include <sys/mman.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <new>

#include "common/error.hpp"
#include "tiers/poison.hpp"

namespace tristore {

FramePool::FramePool(std::uint64_t budget_bytes) : budget_bytes_(budget_bytes) {
  const std::uint64_t slabs = budget_bytes / kSlabBytes;
  if (slabs < kMinSlabs)
    fail(
        "DRAM budget of {} bytes is too small: the buffer pool needs at least {} frames of {} "
        "bytes",
        budget_bytes, kMinSlabs, kSlabBytes);
  mapped_bytes_ = slabs * kSlabBytes;
  void* memory = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED)
    fail("cannot map a DRAM buffer pool of {} bytes: {}", mapped_bytes_, std::strerror(errno));
  base_ = static_cast<std::byte*>(memory);
  // Huge pages: a lookup touches a few lines in each of several frames, each a TLB miss with
  // 4 KiB pages (main-memory's arena asks for the same, so the comparison stays fair).
  madvise(memory, mapped_bytes_, MADV_HUGEPAGE);
  poison_bytes(base_, mapped_bytes_);
  slabs_.resize(slabs);
  free_slabs_.reserve(slabs);
  for (std::size_t s = slabs; s-- > 0;) free_slabs_.push_back(static_cast<std::uint32_t>(s));
}

FramePool::~FramePool() {
  // The address range may be mapped again later: leave no poisoned shadow behind.
  unpoison_bytes(base_, mapped_bytes_);
  munmap(base_, mapped_bytes_);
}

std::size_t FramePool::take_free_slab() {
  if (free_slabs_.empty()) return slabs_.size();
  const std::size_t slab = free_slabs_.back();
  free_slabs_.pop_back();
  return slab;
}

FullFrame* FramePool::try_allocate_full() {
  const std::size_t slab = take_free_slab();
  if (slab == slabs_.size()) return nullptr;
  slabs_[slab].kind = SlabKind::kFull;
  ++full_frames_;
  FullFrame* frame = full_frame(slab);
  unpoison_bytes(frame, offsetof(FullFrame, data));
  return new (frame) FullFrame;
}

MiniPage* FramePool::try_allocate_mini() {
  // 1. A mini slab with a free slot; entries that filled up or were freed are dropped lazily.
  std::size_t slab = slabs_.size();
  while (!partial_minis_.empty()) {
    const std::size_t candidate = partial_minis_.back();
    if (slabs_[candidate].kind == SlabKind::kMini && slabs_[candidate].minis_in_use != kAllMinis) {
      slab = candidate;
      break;
    }
    partial_minis_.pop_back();
    slabs_[candidate].listed = false;
  }
  // 2. Otherwise a free slab becomes a mini slab.
  if (slab == slabs_.size()) {
    slab = take_free_slab();
    if (slab == slabs_.size()) return nullptr;
    slabs_[slab].kind = SlabKind::kMini;
    slabs_[slab].minis_in_use = 0;
    list_partial(slab);
  }
  const auto index = static_cast<std::size_t>(std::countr_one(slabs_[slab].minis_in_use));
  slabs_[slab].minis_in_use = static_cast<std::uint16_t>(slabs_[slab].minis_in_use | (1u << index));
  ++mini_pages_;
  MiniPage* mini = mini_page(slab, index);
  unpoison_bytes(mini, offsetof(MiniPage, data));
  auto* result = new (mini) MiniPage;
  result->header.flags.store(frame_flag::kMini, std::memory_order_relaxed);
  return result;
}

void FramePool::release(FrameHeader* frame) {
  const std::size_t slab = slab_of(frame);
  if (!frame->is_mini()) {
    assert(slabs_[slab].kind == SlabKind::kFull);
    --full_frames_;
    frame->~FrameHeader();
    poison_bytes(frame, kSlabBytes);
    slabs_[slab].kind = SlabKind::kFree;
    free_slabs_.push_back(static_cast<std::uint32_t>(slab));
    return;
  }
  assert(slabs_[slab].kind == SlabKind::kMini);
  const auto index = static_cast<std::size_t>(reinterpret_cast<std::byte*>(frame) -
                                              reinterpret_cast<std::byte*>(full_frame(slab))) /
                     sizeof(MiniPage);
  Slab& info = slabs_[slab];
  const bool was_full = info.minis_in_use == kAllMinis;
  info.minis_in_use = static_cast<std::uint16_t>(info.minis_in_use & ~(1u << index));
  --mini_pages_;
  frame->~FrameHeader();
  poison_bytes(frame, sizeof(MiniPage));
  if (info.minis_in_use == 0) {
    info.kind = SlabKind::kFree;
    free_slabs_.push_back(static_cast<std::uint32_t>(slab));
  } else if (was_full) {
    list_partial(slab);
  }
}

}  // namespace tristore
