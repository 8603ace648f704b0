#pragma once
// The NVM admission set (paper section 4.2): a bounded FIFO set of the page ids most recently
// denied NVM admission. A page evicted from DRAM is admitted to NVM when it is found here
// (and removed); otherwise it is added, pushing out the oldest id when the set is full. Pages
// evicted again soon after a denial are warm; pages read once never pollute NVM.
//
// Default capacity (capacity 0 in BufferManagerOptions): the number of NVM slots, like ARC's
// ghost list that remembers as many evicted pages as the cache holds: a denied page is
// remembered for about as long as it would have stayed in NVM had it been admitted.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/types.hpp"
#include "tiers/page_id_map.hpp"

namespace tristore {

class AdmissionSet {
 public:
  // A set far larger than NVM remembers denials long past (and its nodes are numbered in 32
  // bits): at most this many entries per NVM slot.
  static constexpr std::uint64_t kMaxEntriesPerNvmSlot = 16;

  explicit AdmissionSet(std::size_t capacity) : members_(capacity), nodes_(capacity) {
    for (std::uint32_t i = 0; i < capacity; ++i) nodes_[i].next = i + 1 < capacity ? i + 1 : kNone;
    free_ = capacity > 0 ? 0 : kNone;
  }

  std::size_t capacity() const { return nodes_.size(); }
  std::size_t size() const { return members_.size(); }
  std::size_t memory_bytes() const {
    return members_.memory_bytes() + nodes_.capacity() * sizeof(Node);
  }
  bool contains(PageId page_id) const { return members_.find(page_id) != nullptr; }

  // True (and the id leaves the set) when `page_id` was recently denied.
  bool take(PageId page_id) {
    const std::uint32_t* node = members_.find(page_id);
    if (node == nullptr) return false;
    unlink(*node);
    members_.erase(page_id);
    return true;
  }

  // Remembers a denial; the oldest id leaves when the set is full.
  void insert(PageId page_id) {
    if (capacity() == 0 || contains(page_id)) return;
    if (free_ == kNone) {
      const PageId oldest = nodes_[head_].page_id;
      unlink(head_);
      members_.erase(oldest);
    }
    const std::uint32_t node = free_;
    free_ = nodes_[node].next;
    nodes_[node] = Node{page_id, tail_, kNone};
    (tail_ == kNone ? head_ : nodes_[tail_].next) = node;
    tail_ = node;
    members_.insert_or_assign(page_id, node);
  }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Node {
    PageId page_id = kInvalidPageId;
    std::uint32_t prev = kNone;
    std::uint32_t next = kNone;
  };

  void unlink(std::uint32_t node) {
    Node& n = nodes_[node];
    (n.prev == kNone ? head_ : nodes_[n.prev].next) = n.next;
    (n.next == kNone ? tail_ : nodes_[n.next].prev) = n.prev;
    n.next = free_;
    free_ = node;
  }

  PageIdMap<std::uint32_t> members_;  // page id -> its node in the FIFO
  std::vector<Node> nodes_;           // doubly linked FIFO, oldest at head_; spare nodes on free_
  std::uint32_t head_ = kNone;
  std::uint32_t tail_ = kNone;
  std::uint32_t free_ = kNone;
};

}  // namespace tristore
