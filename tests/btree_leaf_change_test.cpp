// A leaf change claims every run of bytes it writes before its first write
// (claim_leaf_change_writes): a guard that holds only some of a page's lines changes a leaf
// beside other threads on that promise (tiers/resident_writes.hpp). Each write must lie inside
// one claimed run, and the change must come out as a model of the leaf says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "btree/leaf_change.hpp"
#include "test_support.hpp"

using namespace tristore;

namespace {

// A page that records what it was asked for and checks every write against it; with
// `refuse`, its claim throws as a guard missing lines does.
struct ClaimingPage {
  std::vector<std::byte> bytes = std::vector<std::byte>(kPageSize);
  std::vector<ByteRange> claimed;
  bool refuse = false;
  std::size_t writes = 0;
  std::size_t writes_outside = 0;

  struct Refused {};
  const std::byte* read(std::uint32_t offset, std::uint32_t) const { return &bytes[offset]; }
  void claim_writes(std::span<const ByteRange> runs) {
    claimed.assign(runs.begin(), runs.end());
    if (refuse) throw Refused{};
  }
  std::byte* write(std::uint32_t offset, std::uint32_t length) {
    ++writes;
    const bool inside = std::any_of(claimed.begin(), claimed.end(), [&](const ByteRange& run) {
      return run.offset <= offset && offset + length <= run.offset + run.length;
    });
    writes_outside += inside ? 0 : 1;
    return &bytes[offset];
  }
};

struct Entry {
  std::uint64_t key;
  std::vector<std::byte> value;
};

// A leaf of `entries` with `value_size`-byte values, written in LeafGeometry's layout.
void write_leaf(ClaimingPage& page, const LeafGeometry& leaf, const std::vector<Entry>& entries) {
  NodeHeader header{};
  header.count = static_cast<std::uint16_t>(entries.size());
  header.is_leaf = 1;
  std::memcpy(&page.bytes[kNodeHeaderOffset], &header, sizeof(header));
  for (std::uint32_t i = 0; i < entries.size(); ++i) {
    std::memcpy(&page.bytes[leaf.key_offset(i)], &entries[i].key, sizeof(std::uint64_t));
    std::memcpy(&page.bytes[leaf.value_offset(i)], entries[i].value.data(), leaf.value_size);
  }
}

void expect_leaf(const ClaimingPage& page, const LeafGeometry& leaf,
                 const std::vector<Entry>& entries) {
  NodeHeader header;
  std::memcpy(&header, &page.bytes[kNodeHeaderOffset], sizeof(header));
  ASSERT_EQ(header.count, entries.size());
  for (std::uint32_t i = 0; i < entries.size(); ++i) {
    std::uint64_t key;
    std::memcpy(&key, &page.bytes[leaf.key_offset(i)], sizeof(key));
    ASSERT_EQ(key, entries[i].key) << "entry " << i;
    ASSERT_EQ(
        std::memcmp(&page.bytes[leaf.value_offset(i)], entries[i].value.data(), leaf.value_size), 0)
        << "entry " << i;
  }
}

std::vector<std::byte> random_value(std::mt19937_64& random, std::uint32_t size) {
  std::vector<std::byte> value(size);
  for (std::byte& b : value) b = static_cast<std::byte>(random());
  return value;
}

}  // namespace

TEST(BTreeLeafChange, RunsAreTheLeastEachKindWrites) {
  const LeafGeometry leaf = LeafGeometry::of(8, 100);
  const LeafChange update{.kind = LeafChangeKind::kUpdate,
                          .flags = 0,
                          .index = 5,
                          .key_size = 8,
                          .part_offset = 10,
                          .value_size = 100,
                          .bytes_size = 20};
  LeafChangeWrites writes = leaf_change_writes(leaf, update, 40);
  ASSERT_EQ(writes.size, 1u);
  EXPECT_EQ(writes.ranges[0].offset, leaf.value_offset(5) + 10);
  EXPECT_EQ(writes.ranges[0].length, 20u);

  // An insert at the end writes one key, one value and the count.
  const LeafChange append{.kind = LeafChangeKind::kInsert,
                          .flags = 0,
                          .index = 40,
                          .key_size = 8,
                          .part_offset = 0,
                          .value_size = 100,
                          .bytes_size = 100};
  writes = leaf_change_writes(leaf, append, 40);
  ASSERT_EQ(writes.size, 3u);
  EXPECT_EQ(writes.ranges[0].offset, leaf.key_offset(40));
  EXPECT_EQ(writes.ranges[0].length, 8u);
  EXPECT_EQ(writes.ranges[1].length, 100u);
  EXPECT_EQ(writes.ranges[2].offset, kNodeHeaderOffset + offsetof(NodeHeader, count));

  // Removing the last entry writes the count only; the first, every entry after it.
  LeafChange remove{.kind = LeafChangeKind::kRemove,
                    .flags = 0,
                    .index = 39,
                    .key_size = 8,
                    .part_offset = 0,
                    .value_size = 100,
                    .bytes_size = 0};
  writes = leaf_change_writes(leaf, remove, 40);
  ASSERT_EQ(writes.size, 1u);
  EXPECT_EQ(writes.ranges[0].length, sizeof(NodeHeader::count));
  remove.index = 0;
  writes = leaf_change_writes(leaf, remove, 40);
  ASSERT_EQ(writes.size, 3u);
  EXPECT_EQ(writes.ranges[0].length, 40u * 8);
  EXPECT_EQ(writes.ranges[1].length, 40u * 100);

  // A change that does not fit the leaf claims nothing (apply_leaf_change refuses it).
  remove.index = 40;
  EXPECT_EQ(leaf_change_writes(leaf, remove, 40).size, 0u);
}

TEST(BTreeLeafChange, EveryWriteLiesInOneClaimedRunAndTheLeafMatchesItsModel) {
  const std::uint64_t seed = testing_support::test_seed();
  std::mt19937_64 random(seed);
  for (std::uint32_t value_size : {8u, 56u, 100u, 1000u}) {
    const LeafGeometry leaf = LeafGeometry::of(8, value_size);
    for (int round = 0; round < 400; ++round) {
      std::vector<Entry> entries(random() % (leaf.capacity + 1));
      for (std::size_t i = 0; i < entries.size(); ++i)
        entries[i] = {2 * i, random_value(random, value_size)};
      ClaimingPage page;
      write_leaf(page, leaf, entries);
      LeafChange change{.kind = LeafChangeKind::kUpdate,
                        .flags = 0,
                        .index = 0,
                        .key_size = 8,
                        .part_offset = 0,
                        .value_size = value_size,
                        .bytes_size = 0};
      std::uint64_t key = 0;
      std::vector<std::byte> bytes;
      // An insert, a remove or an update (an insert where the leaf is empty, none where full).
      int kind = entries.empty() ? 0 : static_cast<int>(random() % 3);
      if (kind == 0 && entries.size() == leaf.capacity) kind = 2;
      if (kind == 0) {
        change.kind = LeafChangeKind::kInsert;
        change.index = static_cast<std::uint16_t>(random() % (entries.size() + 1));
        change.bytes_size = value_size;
        key = 2 * change.index + 1;
        bytes = random_value(random, value_size);
        entries.insert(entries.begin() + change.index, Entry{key, bytes});
      } else if (kind == 1) {
        change.kind = LeafChangeKind::kRemove;
        change.index = static_cast<std::uint16_t>(random() % entries.size());
        key = entries[change.index].key;
        entries.erase(entries.begin() + change.index);
      } else {
        change.index = static_cast<std::uint16_t>(random() % entries.size());
        change.part_offset = static_cast<std::uint16_t>(random() % value_size);
        change.bytes_size =
            static_cast<std::uint32_t>(1 + random() % (value_size - change.part_offset));
        key = entries[change.index].key;
        bytes = random_value(random, change.bytes_size);
        std::copy(bytes.begin(), bytes.end(),
                  entries[change.index].value.begin() + change.part_offset);
      }
      apply_leaf_change(page, change, reinterpret_cast<const std::byte*>(&key), bytes.data());
      ASSERT_EQ(page.writes_outside, 0u)
          << "seed " << seed << ", kind " << static_cast<int>(change.kind) << " at " << change.index
          << " of a " << value_size << "-byte leaf";
      expect_leaf(page, leaf, entries);
      if (HasFatalFailure()) FAIL() << "seed " << seed;
    }
  }
}

TEST(BTreeLeafChange, ARefusedClaimLeavesThePageAsItWas) {
  const LeafGeometry leaf = LeafGeometry::of(8, 100);
  std::mt19937_64 random(7);
  std::vector<Entry> entries(30);
  for (std::size_t i = 0; i < entries.size(); ++i) entries[i] = {2 * i, random_value(random, 100)};
  ClaimingPage page;
  write_leaf(page, leaf, entries);
  const std::vector<std::byte> before = page.bytes;
  page.refuse = true;
  const std::uint64_t key = 9;
  const std::vector<std::byte> value = random_value(random, 100);
  const LeafChange insert{.kind = LeafChangeKind::kInsert,
                          .flags = 0,
                          .index = 5,
                          .key_size = 8,
                          .part_offset = 0,
                          .value_size = 100,
                          .bytes_size = 100};
  EXPECT_THROW(
      apply_leaf_change(page, insert, reinterpret_cast<const std::byte*>(&key), value.data()),
      ClaimingPage::Refused);
  EXPECT_EQ(page.writes, 0u);
  EXPECT_TRUE(page.bytes == before);
  EXPECT_EQ(page.claimed.size(), 3u);
}
