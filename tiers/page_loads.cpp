// BufferManager (tiers/buffer_manager.hpp): whole-page reads of readers and changes that share
// the database latch, run outside the miss latch so that several are in flight at once: from
// SSD (transition 1 of a miss), and from NVM where the tier is page-grained (transition 2 of
// basic-nvm, which copies the page and pays its latency). The frame enters the page table
// before its read as an I/O-in-flight entry (kLoading): a thread that wants the page meanwhile
// waits for that read instead of starting another, a miss that makes room does not evict it
// (it is fixed), the NVM slot it is read from is no NVM victim (the page table leads to the
// frame), and it shows its bytes only once they are all there. No exclusive holder ever sees
// one: threads finish their reads before they leave the latch.
#include <cassert>

#include "common/spin_latch.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/poison.hpp"

namespace tristore {

FullFrame* BufferManager::begin_page_load(PageId page_id, std::byte* nvm_slot) {
  FullFrame* frame = nvm_slot != nullptr
                         ? as_full(frame_for_nvm_slot(page_id, nvm_slot, /*mini=*/false))
                         : allocate_full();
  unpoison_bytes(frame->data, kPageSize);
  frame->header.page_id = page_id;
  frame->header.set(frame_flag::kLoading);
  ++frame->header.fix_count;
  page_table_.insert_or_assign(page_id, &frame->header);
  return frame;
}

void BufferManager::await_page_load(PageLoad& load) {
  FrameHeader& header = load.frame->header;
  if (!load.mine) {
    // The thread that reads it clears the flag under the miss latch, success or not; the
    // frame is not reused while this thread is inside.
    add_in_own_slot(thread_reads_[thread_slot()].load_waits, 1);
    for (unsigned spins = 0; header.has(frame_flag::kLoading); ++spins) spin_back_off(spins);
    return;
  }
  try {
    if (header.nvm != nullptr)
      copy_nvm_page(load.frame);
    else
      ssd_->read(header.page_id, load.frame->data);
  } catch (...) {
    load.error = std::current_exception();
  }
}

void BufferManager::copy_nvm_page(FullFrame* frame) {
  // Checked from the copy, once per open: NVM is read once, and outside the miss latch.
  const SlotId slot_id = nvm_->slot_of(frame->header.nvm);
  nvm_->read_page(slot_id, frame->data);
  if (!nvm_->content_checked(slot_id)) nvm_->check_copy(slot_id, frame->data);
}

void BufferManager::finish_page_load(PageLoad& load) {
  FrameHeader& header = load.frame->header;
  assert(load.mine && header.has(frame_flag::kLoading) && header.fix_count == 1);
  --header.fix_count;
  if (load.error == nullptr) {
    // The bytes first: a reader that sees the page whole reads them (released, acquired).
    load.frame->mark_all_resident();
    header.clear(frame_flag::kLoading);
    return;
  }
  // A failed read leaves no trace: the page table leads to the page where it was read from,
  // and the next reader of the page reads it again.
  if (header.nvm != nullptr)
    page_table_.insert_or_assign(header.page_id, header.nvm);
  else
    page_table_.erase(header.page_id);
  header.clear(frame_flag::kLoading);
  release_frame(&header);
  std::rethrow_exception(load.error);
}

}  // namespace tristore
