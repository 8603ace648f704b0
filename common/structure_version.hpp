#pragma once
// A B-tree's structure version, for leaf splits beside changes (btree/btree.hpp,
// docs/design.md section 8): a seqlock over the tree's inner nodes, one per tree, shared by
// every handle of it. Even while no split runs; a split beside changes makes
// it odd (it is the splits' latch, taken only by a try) and even again when the new leaf is
// linked into its parent. Every descent beside changes reads it before it starts, checks it
// after each child it fixes and once its leaf is latched (or read optimistically), and starts
// from the root again where it moved: so no descent follows a child it read from an inner node
// a split was changing, or keeps a leaf whose keys a split moved on.
//
//   const std::uint64_t seen = version.stable();
//   ... read an inner node, fix the child ...
//   if (!version.unchanged_since(seen)) start again;
#include <atomic>
#include <cstdint>

#include "common/optimistic_read_fence.hpp"
#include "common/spin_latch.hpp"

namespace tristore {

class StructureVersion {
 public:
  // The version to check against, once no split runs (a split is a few microseconds).
  std::uint64_t stable() const {
    for (unsigned spins = 0;; ++spins) {
      const std::uint64_t version = word_.load(std::memory_order_acquire);
      if ((version & 1) == 0) [[likely]]
        return version;
      spin_back_off(spins);
    }
  }
  // Whether no split began since `seen`: the reads before this call saw none of its writes.
  bool unchanged_since(std::uint64_t seen) const {
    optimistic_read_fence(std::memory_order_acquire);
    return word_.load(std::memory_order_relaxed) == seen;
  }
  // A split's latch, only from the version its descent saw (so its path is as it saw it).
  bool try_begin_split(std::uint64_t seen) {
    if (!word_.compare_exchange_strong(seen, seen + 1, std::memory_order_acq_rel)) return false;
    optimistic_read_fence(std::memory_order_release);  // its writes stay after the odd version
    return true;
  }
  void end_split() {
    word_.store(word_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

 private:
  // Its own line: read by every descent beside changes, written only by splits.
  alignas(64) std::atomic<std::uint64_t> word_{0};
};

}  // namespace tristore
