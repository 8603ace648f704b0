#pragma once
// A swip is the 8-byte reference a parent page holds to a child: bit 63 set = unswizzled page
// id, bit 63 clear = pointer to the child's DRAM frame (user-space pointers stay below 2^47).
#include <atomic>
#include <bit>
#include <cassert>
#include <cstdint>

#include "common/types.hpp"

namespace tristore {

class Swip {
 public:
  Swip() = default;
  static Swip from_page_id(PageId pid) {
    assert((pid & kUnswizzledTag) == 0);
    return Swip(pid | kUnswizzledTag);
  }
  template <typename Frame>
  static Swip from_frame(Frame* frame) {
    return Swip(std::bit_cast<std::uint64_t>(frame));
  }

  bool is_swizzled() const { return (word_ & kUnswizzledTag) == 0; }
  PageId page_id() const {
    assert(!is_swizzled());
    return word_ & ~kUnswizzledTag;
  }
  template <typename Frame>
  Frame* frame() const {
    assert(is_swizzled());
    return std::bit_cast<Frame*>(word_);
  }
  std::uint64_t raw() const { return word_; }

  // A swip in a page that readers beside the buffer manager follow (tiers/resident_reads.hpp)
  // is read once and atomically, and (un)swizzling stores it atomically.
  static Swip load(const Swip& where) {
    return Swip(std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(where.word_))
                    .load(std::memory_order_acquire));
  }
  static void store(Swip& where, Swip value) {
    std::atomic_ref<std::uint64_t>(where.word_).store(value.word_, std::memory_order_release);
  }
  bool operator==(const Swip&) const = default;

  // Moves `count` swips within one page (a split shifting an inner node's swips beside
  // readers), each read and stored whole, in the order that reads every source before it is
  // overwritten. `moving(i, swip)` sees each before it is stored at to[i].
  template <typename Moving>
  static void move_within_page(Swip* to, const Swip* from, std::uint32_t count, Moving&& moving) {
    auto move = [&](std::uint32_t i) {
      const Swip swip = load(from[i]);
      moving(i, swip);
      store(to[i], swip);
    };
    if (to < from) {
      for (std::uint32_t i = 0; i < count; ++i) move(i);
    } else {
      for (std::uint32_t i = count; i-- > 0;) move(i);
    }
  }

 private:
  static constexpr std::uint64_t kUnswizzledTag = std::uint64_t{1} << 63;
  explicit Swip(std::uint64_t word) : word_(word) {}
  std::uint64_t word_ = kUnswizzledTag;  // default: page id 0, unswizzled
};
static_assert(sizeof(Swip) == 8);

}  // namespace tristore
