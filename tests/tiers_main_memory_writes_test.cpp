// MainMemoryWrites (tiers/main_memory_writes.hpp): main-memory's leaf entries changed side by
// side, each leaf latched in the word main-memory keeps per page. A lookup reads its leaf
// optimistically against that word's version (tiers/optimistic_leaf_read.hpp): a read a change
// spoilt runs again, after a few spoilt tries under the shared latch, and a read nothing
// spoilt leaves the word as it found it. A leaf split beside changes moves swips a word at a
// time.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "common/shared_spin_latch.hpp"
#include "tiers/main_memory_access.hpp"
#include "tiers/main_memory_writes.hpp"
#include "tiers/optimistic_leaf_read.hpp"

namespace tristore {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

class MainMemoryWritesTest : public ::testing::Test {
 protected:
  MainMemoryWritesTest() : memory_(4 * kMiB) {
    MainMemoryAccess::Guard page = memory_.allocate_page();
    swip_ = memory_.swip_of(page);
  }
  // A change of the page's first byte, under its exclusive latch, as another thread's would be.
  void change(std::byte to) {
    MainMemoryWrites writes(memory_);
    MainMemoryWrites::Guard leaf = writes.fix(swip_, nullptr);
    writes.latch_leaf(leaf, true);
    *leaf.write(kFirst, 1) = to;
  }
  std::byte first_byte(MainMemoryWrites::Guard& leaf) { return *leaf.read(kFirst, 1); }
  std::uint64_t& word() { return memory_.latch_word(swip_.frame<std::byte>()); }

  static constexpr std::uint32_t kFirst = 64;  // past the page header
  MainMemoryAccess memory_;
  Swip swip_;
};

TEST_F(MainMemoryWritesTest, AReadAChangeSpoiltRunsAgainAndOneNothingSpoiltWritesNothing) {
  change(std::byte{1});
  const Counters before = memory_.counters();
  {
    MainMemoryWrites writes(memory_);
    MainMemoryWrites::Guard leaf = writes.fix(swip_, nullptr);
    unsigned tries = 0;
    const std::byte read = writes.read_leaf(leaf, [&] {
      if (++tries == 1) change(std::byte{2});  // the first try is spoilt
      return first_byte(leaf);
    });
    EXPECT_EQ(tries, 2u);
    EXPECT_EQ(read, std::byte{2});
    const std::uint64_t untouched = word();
    tries = 0;
    EXPECT_EQ(writes.read_leaf(leaf,
                               [&] {
                                 ++tries;
                                 EXPECT_EQ(word(), untouched) << "no latch taken to read";
                                 return first_byte(leaf);
                               }),
              std::byte{2});
    EXPECT_EQ(tries, 1u);
    EXPECT_EQ(word(), untouched);
  }
  EXPECT_EQ(memory_.counters().leaf_reads_retried - before.leaf_reads_retried, 1u);
}

TEST_F(MainMemoryWritesTest, AfterItsTriesAReadHoldsTheSharedLatch) {
  const Counters before = memory_.counters();
  {
    MainMemoryWrites writes(memory_);
    MainMemoryWrites::Guard leaf = writes.fix(swip_, nullptr);
    unsigned tries = 0;
    bool latched_at_last = false;
    writes.read_leaf(leaf, [&] {
      ++tries;
      if (tries <= kOptimisticAttempts)
        change(static_cast<std::byte>(tries));
      else
        latched_at_last = (word() & SharedSpinLatch::kSharedMask) != 0;
      return first_byte(leaf);
    });
    EXPECT_EQ(tries, kOptimisticAttempts + 1);
    EXPECT_TRUE(latched_at_last) << "the last try reads under the shared latch";
    EXPECT_EQ(first_byte(leaf), static_cast<std::byte>(kOptimisticAttempts));
  }
  EXPECT_EQ(word() & SharedSpinLatch::kSharedMask, 0u) << "the guard let its shared latch go";
  EXPECT_EQ(word() & SharedSpinLatch::kVersionMask, kOptimisticAttempts)
      << "one version step per change";
  EXPECT_EQ(memory_.counters().leaf_reads_retried - before.leaf_reads_retried, kOptimisticAttempts);
}

// A leaf split beside changes moves a parent's swips a word at a time (a descent beside reads
// each swip once): overlapping moves either way keep every swip, as memmove would.
TEST_F(MainMemoryWritesTest, SwipsMoveAWordAtATimeEitherWayAsMemmoveWould) {
  MainMemoryWrites writes(memory_);
  MainMemoryWrites::Guard parent = writes.allocate_page();  // latched exclusive, as a split's
  constexpr std::uint32_t kSwipsAt = 128, kCount = 6;
  auto* swips = reinterpret_cast<Swip*>(parent.write(kSwipsAt, (kCount + 2) * sizeof(Swip)));
  const auto fill = [&] {
    for (std::uint32_t i = 0; i < kCount + 2; ++i) swips[i] = Swip::from_page_id(100 + i);
  };
  fill();
  writes.move_swips(parent, kSwipsAt + 2 * sizeof(Swip), &parent, swips, kCount);  // right
  for (std::uint32_t i = 0; i < kCount; ++i) EXPECT_EQ(swips[i + 2].page_id(), 100 + i) << i;
  fill();
  writes.move_swips(parent, kSwipsAt, &parent, swips + 2, kCount);  // left
  for (std::uint32_t i = 0; i < kCount; ++i) EXPECT_EQ(swips[i].page_id(), 102 + i) << i;
  EXPECT_EQ(writes.swip_of(parent).frame<std::byte>(), parent.whole_page());
}

}  // namespace
}  // namespace tristore
