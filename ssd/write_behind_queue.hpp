#pragma once
// Page writes that go on behind their caller (SsdPageFile::write_behind). A page image is
// copied into one of a fixed number of buffers, and writer threads of the queue's own write
// the buffers, oldest first, a page's writes in the order they came and other pages' side by
// side, so the caller does not wait for the device: a DRAM eviction takes its frame back at
// once, and the database's latches are not held across the write.
//
// A page still queued is read from its newest buffer (copy_if_queued), so a reader never sees
// the file older than what was written; a synchronous write of that page waits for the queued
// one (wait_until_written), so the newest image lands last; drain waits for them all (the file's
// sync does that first). A failed write stops the queue: its pages stay readable here, and every
// later push, wait and drain throws an Error naming the failure.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/types.hpp"
#include "ssd/aligned_page_buffer.hpp"

namespace tristore {

class WriteBehindQueue {
 public:
  // Writes one page image in place, synchronously; may throw.
  using Write = std::function<void(PageId id, const std::byte* page)>;

  // `pages` buffers, written by up to `threads` writers at once (a device takes several
  // writes in flight faster than one after another).
  WriteBehindQueue(std::size_t pages, std::size_t threads, Write write);
  // Writes what is queued (unless a write failed), then stops the writers.
  ~WriteBehindQueue();
  WriteBehindQueue(const WriteBehindQueue&) = delete;
  WriteBehindQueue& operator=(const WriteBehindQueue&) = delete;

  // Queues page `id`: `fill` (which must not throw) writes its image into a free
  // (O_DIRECT-aligned) buffer, waiting for one while all are queued. Returns whether it
  // waited.
  template <typename Fill>
  bool push(PageId id, Fill&& fill) {
    const Taken taken = take_buffer();
    fill(buffer(taken.slot));
    hand_over(taken.slot, id);
    return taken.waited;
  }
  // Copies the newest queued image of page `id` into `page`; false if none is queued.
  bool copy_if_queued(PageId id, std::byte* page) const;
  // Returns once no write of page `id` is queued.
  void wait_until_written(PageId id);
  // Returns once every write queued before the call is done.
  void drain();

  std::size_t capacity() const { return slots_.size(); }

 private:
  enum class State : std::uint8_t { kFree, kFilling, kQueued, kWriting };
  struct Slot {
    State state = State::kFree;
    PageId id = kInvalidPageId;
    std::uint64_t sequence = 0;  // order of hand_over: a page's writes land in this order
    bool pending() const { return state == State::kQueued || state == State::kWriting; }
  };
  struct Taken {
    std::size_t slot;
    bool waited;
  };
  Taken take_buffer();
  void hand_over(std::size_t slot, PageId id);
  // Under mutex_: whether a write of the page is queued or being written (Slot::pending).
  bool pending(PageId id) const;
  // Under mutex_: the oldest queued slot no older write of its page holds back; capacity()
  // if none.
  std::size_t next_to_write() const;
  [[noreturn]] void fail_stopped() const;
  void write_queued();  // a writer thread
  std::byte* buffer(std::size_t slot) const { return buffers_.data() + slot * kPageSize; }

  Write write_;
  std::size_t thread_count_;
  mutable AlignedPageBuffer buffers_;
  mutable std::mutex mutex_;
  // Two conditions, so that a page queued wakes one writer and a write done wakes only the
  // callers waiting for one, not every writer (on a machine with few cores, each thread woken
  // for nothing takes a core from the engine's threads).
  std::condition_variable writable_;  // writers: a page queued, a write failed, the queue stopping
  std::condition_variable written_;   // callers: a write done or failed
  std::vector<Slot> slots_;
  std::vector<std::size_t> free_;  // free slots
  std::uint64_t next_sequence_ = 1;
  bool stopping_ = false;
  std::string failure_;               // non-empty: a write failed; nothing more is written
  std::vector<std::thread> writers_;  // started by the first push
};

}  // namespace tristore
