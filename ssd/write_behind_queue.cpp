#include "ssd/write_behind_queue.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <utility>

#include "common/error.hpp"

namespace tristore {

WriteBehindQueue::WriteBehindQueue(std::size_t pages, std::size_t threads, Write write)
    : write_(std::move(write)),
      thread_count_(threads),
      buffers_(std::max<std::size_t>(pages, 1) * kPageSize),
      slots_(pages) {
  if (pages == 0 || threads == 0)
    fail("a write-behind queue needs at least one page buffer and one writer");
  for (std::size_t slot = pages; slot-- > 0;) free_.push_back(slot);
}

WriteBehindQueue::~WriteBehindQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  writable_.notify_all();
  for (std::thread& writer : writers_) writer.join();
}

WriteBehindQueue::Taken WriteBehindQueue::take_buffer() {
  std::unique_lock lock(mutex_);
  if (writers_.empty())
    for (std::size_t i = 0; i < thread_count_; ++i)
      writers_.emplace_back([this] { write_queued(); });
  const bool waited = free_.empty();
  written_.wait(lock, [&] { return !free_.empty() || !failure_.empty(); });
  if (!failure_.empty()) fail_stopped();
  const std::size_t slot = free_.back();
  free_.pop_back();
  slots_[slot].state = State::kFilling;
  return {slot, waited};
}

void WriteBehindQueue::hand_over(std::size_t slot, PageId id) {
  {
    std::lock_guard lock(mutex_);
    slots_[slot] = {State::kQueued, id, next_sequence_++};
  }
  // One writer: a writer that finishes a write looks for the next itself, which takes a
  // write held back behind an older one of its page once that is done.
  writable_.notify_one();
}

bool WriteBehindQueue::pending(PageId id) const {
  return std::any_of(slots_.begin(), slots_.end(),
                     [&](const Slot& slot) { return slot.id == id && slot.pending(); });
}

std::size_t WriteBehindQueue::next_to_write() const {
  std::size_t best = capacity();
  for (std::size_t i = 0; i < capacity(); ++i) {
    const Slot& slot = slots_[i];
    if (slot.state != State::kQueued) continue;
    if (best != capacity() && slots_[best].sequence < slot.sequence) continue;
    // Held back while an older write of the page is queued or under way.
    const bool held_back = std::any_of(slots_.begin(), slots_.end(), [&](const Slot& other) {
      return other.id == slot.id && other.sequence < slot.sequence && other.pending();
    });
    if (!held_back) best = i;
  }
  return best;
}

bool WriteBehindQueue::copy_if_queued(PageId id, std::byte* page) const {
  std::lock_guard lock(mutex_);
  // The newest: a page queued twice reads as written last. A writer only reads the buffer it
  // writes, and frees it under the mutex, so the copy is whole.
  const Slot* newest = nullptr;
  for (const Slot& slot : slots_)
    if (slot.id == id && slot.pending() && (newest == nullptr || newest->sequence < slot.sequence))
      newest = &slot;
  if (newest == nullptr) return false;
  std::memcpy(page, buffer(static_cast<std::size_t>(newest - slots_.data())), kPageSize);
  return true;
}

void WriteBehindQueue::wait_until_written(PageId id) {
  std::unique_lock lock(mutex_);
  written_.wait(lock, [&] { return !pending(id) || !failure_.empty(); });
  if (pending(id)) fail_stopped();
}

void WriteBehindQueue::drain() {
  std::unique_lock lock(mutex_);
  const std::uint64_t before = next_sequence_;
  auto done = [&] {
    return std::none_of(slots_.begin(), slots_.end(),
                        [&](const Slot& slot) { return slot.sequence < before && slot.pending(); });
  };
  written_.wait(lock, [&] { return done() || !failure_.empty(); });
  if (!done()) fail_stopped();
}

void WriteBehindQueue::fail_stopped() const {
  fail("an SSD write behind the engine failed, so no more pages are written: {}", failure_);
}

void WriteBehindQueue::write_queued() {
  std::unique_lock lock(mutex_);
  for (;;) {
    std::size_t slot = capacity();
    writable_.wait(lock, [&] {
      if (!failure_.empty()) return true;
      slot = next_to_write();
      if (slot != capacity()) return true;
      return stopping_ && std::none_of(slots_.begin(), slots_.end(),
                                       [](const Slot& s) { return s.state == State::kQueued; });
    });
    if (!failure_.empty() || slot == capacity()) return;
    slots_[slot].state = State::kWriting;
    const PageId id = slots_[slot].id;
    lock.unlock();
    std::string failure;
    try {
      write_(id, buffer(slot));
    } catch (const std::exception& error) {
      failure = error.what();
    } catch (...) {
      failure = "unknown error";
    }
    lock.lock();
    if (!failure.empty()) {
      failure_ = std::move(failure);  // the buffer stays pending, readable
      writable_.notify_all();
      written_.notify_all();
      return;
    }
    slots_[slot] = Slot{};
    free_.push_back(slot);
    written_.notify_all();
  }
}

}  // namespace tristore
