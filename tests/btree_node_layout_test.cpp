#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "btree/btree.hpp"
#include "btree/node_layout.hpp"
#include "tiers/main_memory_access.hpp"

using namespace tristore;

using Leaf8 = LeafLayout<std::uint64_t, std::uint64_t>;
using Inner8 = InnerLayout<std::uint64_t>;
using LeafYcsb = LeafLayout<std::uint32_t, std::array<char, 1000>>;

static_assert(PageAccess<MainMemoryAccess>);
// 8-byte keys and values: (16384 - 64) / 16 = 1020 minus the padding that aligns values.
static_assert(Leaf8::kCapacity == 1016);
static_assert(Leaf8::kValuesOffset % kCacheLineSize == 0);
static_assert(Leaf8::value_offset(Leaf8::kCapacity) <= kPageSize);
static_assert(Inner8::kCapacity == 1016);
static_assert(Inner8::swip_offset(Inner8::kCapacity + 1) <= kPageSize);
static_assert(LeafYcsb::kCapacity == 16);
static_assert(Leaf8::key_offset(0) >= kPageHeaderSize + sizeof(NodeHeader));

TEST(BTreeNodeLayout, ArraysFitThePageAndStartOnCacheLines) {
  EXPECT_EQ(Leaf8::key_offset(0) % kCacheLineSize, 0u);
  EXPECT_EQ(Leaf8::kValuesOffset % kCacheLineSize, 0u);
  EXPECT_EQ(Inner8::kSwipsOffset % kCacheLineSize, 0u);
  EXPECT_GE(Leaf8::kValuesOffset, Leaf8::key_offset(Leaf8::kCapacity));
  EXPECT_GE(Inner8::kSwipsOffset, Inner8::key_offset(Inner8::kCapacity));
}

TEST(BTreeNodeLayout, CapacityIsTheLargestThatFits) {
  // One more entry would overflow the page.
  EXPECT_GT(
      align_to_line(kNodeKeysOffset + (Leaf8::kCapacity + 1) * 8) + (Leaf8::kCapacity + 1) * 8,
      kPageSize);
  EXPECT_GT(LeafYcsb::value_offset(LeafYcsb::kCapacity + 1), kPageSize);
  EXPECT_LE(LeafYcsb::value_offset(LeafYcsb::kCapacity), kPageSize);
}

TEST(BTreeNodeLayout, NodeHeaderStaysOutOfTheStorageLayersBytes) {
  EXPECT_GE(kNodeHeaderOffset, kPageHeaderSize);
  EXPECT_LE(kNodeHeaderOffset + sizeof(NodeHeader), kNodeKeysOffset);
}
