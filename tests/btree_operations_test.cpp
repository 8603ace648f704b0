#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "btree/btree.hpp"
#include "common/error.hpp"
#include "tiers/main_memory_access.hpp"

using namespace tristore;

namespace {

// Main-memory pages, recording which cache lines the tree asks for and which bytes it dirties.
class RecordingAccess {
 public:
  struct Log {
    std::set<std::pair<PageId, std::uint32_t>> lines;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> dirty;  // (offset, length)
    int whole_pages = 0;
    int guards_alive = 0;
    int max_guards_alive = 0;
    void touch(PageId page, std::uint32_t offset, std::uint32_t length) {
      for (std::uint32_t l = line_of(offset); length > 0 && l <= line_of(offset + length - 1); ++l)
        lines.emplace(page, l);
    }
    void clear() {
      lines.clear();
      dirty.clear();
      whole_pages = 0;
    }
  };

  class Guard {
   public:
    Guard(Guard&& other) noexcept
        : inner_(other.inner_), log_(std::exchange(other.log_, nullptr)) {}
    Guard& operator=(Guard&& other) noexcept {
      release();
      inner_ = other.inner_;
      log_ = std::exchange(other.log_, nullptr);
      return *this;
    }
    ~Guard() { release(); }
    PageId page_id() const { return inner_.page_id(); }
    const std::byte* read(std::uint32_t offset, std::uint32_t length) {
      log_->touch(page_id(), offset, length);
      return inner_.read(offset, length);
    }
    std::byte* write(std::uint32_t offset, std::uint32_t length) {
      log_->touch(page_id(), offset, length);
      mark_dirty(offset, length);
      return inner_.write(offset, length);
    }
    std::byte* whole_page() {
      ++log_->whole_pages;
      return inner_.whole_page();
    }
    void mark_dirty(std::uint32_t offset, std::uint32_t length) {
      log_->dirty.emplace_back(offset, length);
    }

   private:
    friend class RecordingAccess;
    Guard(MainMemoryAccess::Guard inner, Log* log) : inner_(inner), log_(log) {
      log_->max_guards_alive = std::max(log_->max_guards_alive, ++log_->guards_alive);
    }
    void release() {
      if (log_ != nullptr) --log_->guards_alive;
      log_ = nullptr;
    }
    MainMemoryAccess::Guard inner_;
    Log* log_;
  };

  Guard allocate_page() { return Guard(memory_.allocate_page(), &log_); }
  Guard fix(Swip& swip, Guard* parent) {
    return Guard(memory_.fix(swip, parent ? &parent->inner_ : nullptr), &log_);
  }
  void move_swips(Guard& to, std::uint32_t offset, Guard* from, Swip* swips, std::uint32_t count) {
    memory_.move_swips(to.inner_, offset, from ? &from->inner_ : nullptr, swips, count);
  }
  Swip swip_of(Guard& guard) { return memory_.swip_of(guard.inner_); }
  void free_page(Guard&& guard) {
    Guard dying = std::move(guard);
    memory_.free_page(std::move(dying.inner_));
  }

  std::uint64_t pages() const { return memory_.bytes_in_use() / kPageSize; }
  Log& log() { return log_; }

 private:
  MainMemoryAccess memory_{1 * kGiBForTests};
  Log log_;
  static constexpr std::uint64_t kGiBForTests = 1ull << 30;
};
static_assert(PageAccess<RecordingAccess>);

// Large keys make small inner nodes, so a few thousand entries give a deep tree.
struct WideKey {
  std::uint64_t value;
  std::array<char, 1016> padding{};
  explicit WideKey(std::uint64_t v = 0) : value(v) {}
  bool operator==(const WideKey& other) const { return value == other.value; }
  auto operator<=>(const WideKey& other) const { return value <=> other.value; }
};
using Payload = std::array<char, 1000>;  // 16 entries per leaf with 4-byte or 8-byte keys

Payload payload_for(std::uint64_t key) {
  Payload p;
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<char>(key * 31 + i);
  return p;
}

template <typename K, typename V>
struct Fixture {
  RecordingAccess access;
  Swip root = BTree<K, V, RecordingAccess>::create(access);
  BTree<K, V, RecordingAccess> tree{access, root};
};

std::vector<std::uint64_t> shuffled(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::uint64_t> keys(n);
  std::iota(keys.begin(), keys.end(), 0);
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(seed));
  return keys;
}

}  // namespace

TEST(BTreeOperations, InsertThenLookupAcrossLeafSplits) {
  Fixture<std::uint64_t, std::uint64_t> f;
  for (std::uint64_t k : shuffled(20000, 1)) ASSERT_TRUE(f.tree.insert(k * 2, k * 7));
  EXPECT_EQ(f.tree.validate(), "");
  BTreeStats s = f.tree.stats();
  EXPECT_EQ(s.entries, 20000u);
  EXPECT_EQ(s.height, 2u);
  EXPECT_GT(s.leaves, 20000u / f.tree.kLeafCapacity);
  for (std::uint64_t k = 0; k < 20000; ++k) {
    std::uint64_t v = 0;
    ASSERT_TRUE(f.tree.lookup(k * 2, v));
    EXPECT_EQ(v, k * 7);
    EXPECT_FALSE(f.tree.lookup(k * 2 + 1, v));
  }
  EXPECT_LE(f.access.log().max_guards_alive, 3);
}

TEST(BTreeOperations, InsertOfAnExistingKeyChangesNothing) {
  Fixture<std::uint64_t, std::uint64_t> f;
  EXPECT_TRUE(f.tree.insert(5, 50));
  EXPECT_FALSE(f.tree.insert(5, 51));
  std::uint64_t v = 0;
  EXPECT_TRUE(f.tree.lookup(5, v));
  EXPECT_EQ(v, 50u);
  EXPECT_FALSE(f.tree.update(6, 1));
  EXPECT_FALSE(f.tree.remove(6));
  EXPECT_TRUE(f.tree.update(5, 52));
  EXPECT_TRUE(f.tree.lookup(5, v));
  EXPECT_EQ(v, 52u);
}

TEST(BTreeOperations, RootSplitMovesTheRootSwipToANewInnerRoot) {
  Fixture<std::uint32_t, Payload> f;
  Swip first_root = f.root;
  for (std::uint32_t k = 0; k < f.tree.kLeafCapacity; ++k)
    ASSERT_TRUE(f.tree.insert(k, payload_for(k)));
  EXPECT_EQ(f.root, first_root);
  EXPECT_EQ(f.tree.stats().height, 1u);
  ASSERT_TRUE(f.tree.insert(1000, payload_for(1000)));
  EXPECT_NE(f.root, first_root);
  BTreeStats s = f.tree.stats();
  EXPECT_EQ(s.height, 2u);
  EXPECT_EQ(s.leaves, 2u);
  EXPECT_EQ(f.tree.validate(), "");
}

TEST(BTreeOperations, InnerSplitsAndMergesKeepTheTreeValidDownToOnePage) {
  Fixture<WideKey, std::uint64_t> f;
  const std::uint64_t n = 3000;
  for (std::uint64_t k : shuffled(n, 2)) ASSERT_TRUE(f.tree.insert(WideKey(k), k));
  EXPECT_LE(f.access.log().max_guards_alive, 3);
  ASSERT_EQ(f.tree.validate(), "");
  EXPECT_GE(f.tree.stats().height, 3u) << "inner nodes must have split";
  std::uint64_t pages_full = f.access.pages();
  std::vector<std::uint64_t> order = shuffled(n, 3);
  for (std::size_t i = 0; i < order.size(); ++i) {
    ASSERT_TRUE(f.tree.remove(WideKey(order[i])));
    if (i % 500 == 0) {
      ASSERT_EQ(f.tree.validate(), "") << "after " << i << " removals";
      f.access.log().max_guards_alive = 0;  // the validation walk holds a whole path
    }
    if (i == n / 2) {
      EXPECT_LT(f.access.pages(), pages_full) << "merges must free pages";
    }
  }
  BTreeStats s = f.tree.stats();
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.height, 1u) << "the root absorbs its only child";
  EXPECT_EQ(f.access.pages(), 1u);
}

TEST(BTreeOperations, UnderflowMergesOnlyWhenTheResultIsAtMostThreeQuartersFull) {
  Fixture<std::uint32_t, Payload> f;
  constexpr std::uint32_t cap = decltype(f.tree)::kLeafCapacity;
  static_assert(cap == 16 && decltype(f.tree)::kLeafUnderfull == 4);
  f.tree.bulk_load(
      4 * cap,
      [](std::size_t i, std::uint32_t& k, Payload& v) {
        k = static_cast<std::uint32_t>(i);
        v = payload_for(i);
      },
      1.0);
  ASSERT_EQ(f.tree.stats().leaves, 4u);
  // Leaf 1 down to 3 entries: underfull, but 3 + 16 > 12 with either full neighbour: it stays.
  for (std::uint32_t k = cap; k < 2 * cap - 3; ++k) ASSERT_TRUE(f.tree.remove(k));
  EXPECT_EQ(f.tree.stats().leaves, 4u);
  EXPECT_EQ(f.tree.stats().min_leaf_entries, 3u);
  // Emptied, it merges with a neighbour that fits whole.
  for (std::uint32_t k = 2 * cap - 3; k < 2 * cap; ++k) ASSERT_TRUE(f.tree.remove(k));
  EXPECT_EQ(f.tree.stats().leaves, 3u);
  EXPECT_EQ(f.tree.validate(), "");
  // Leaf 0 underfull next to a full leaf: stays.
  for (std::uint32_t k = 0; k < cap - 3; ++k) ASSERT_TRUE(f.tree.remove(k));
  EXPECT_EQ(f.tree.stats().leaves, 3u);
  // Leaf 3 down to 10: merging leaf 0 (3) into it gives 13 > 12: still no merge; at 9 it fits.
  for (std::uint32_t k = 3 * cap; k < 3 * cap + 6; ++k) ASSERT_TRUE(f.tree.remove(k));
  EXPECT_EQ(f.tree.stats().leaves, 3u);
  ASSERT_TRUE(f.tree.remove(3 * cap + 6));
  ASSERT_TRUE(f.tree.remove(cap - 3));  // leaf 0 underfull again: 2 + 16 from leaf 1 > 12
  EXPECT_EQ(f.tree.stats().leaves, 3u);
  EXPECT_EQ(f.tree.validate(), "");
  std::vector<std::uint32_t> keys;
  f.tree.scan(0, 100, [&](std::uint32_t k, const Payload& v) {
    EXPECT_EQ(v, payload_for(k));
    keys.push_back(k);
    return true;
  });
  std::vector<std::uint32_t> expected;
  for (std::uint32_t k = cap - 2; k < cap; ++k) expected.push_back(k);
  for (std::uint32_t k = 2 * cap; k < 3 * cap; ++k) expected.push_back(k);
  for (std::uint32_t k = 3 * cap + 7; k < 4 * cap; ++k) expected.push_back(k);
  EXPECT_EQ(keys, expected);
}

TEST(BTreeOperations, UnderfullLeafMergesWithItsLeftNeighbourWhenThatFits) {
  Fixture<std::uint32_t, Payload> f;
  constexpr std::uint32_t cap = decltype(f.tree)::kLeafCapacity;
  f.tree.bulk_load(
      2 * cap,
      [](std::size_t i, std::uint32_t& k, Payload& v) {
        k = static_cast<std::uint32_t>(i);
        v = payload_for(i);
      },
      1.0);
  for (std::uint32_t k = 0; k < cap / 2; ++k) ASSERT_TRUE(f.tree.remove(k));  // left: 8
  EXPECT_EQ(f.tree.stats().leaves, 2u);
  for (std::uint32_t k = cap; k < 2 * cap - 3; ++k) ASSERT_TRUE(f.tree.remove(k));  // right: 3
  EXPECT_EQ(f.tree.stats().height, 1u) << "8 + 3 <= 12: merged, and the root absorbed the leaf";
  EXPECT_EQ(f.tree.stats().entries, 11u);
  EXPECT_EQ(f.access.pages(), 1u);
}

TEST(BTreeOperations, ScanVisitsAscendingFromAKeyUpToTheLimit) {
  Fixture<std::uint64_t, std::uint64_t> f;
  for (std::uint64_t k : shuffled(5000, 4)) f.tree.insert(k * 10, k);
  std::vector<std::uint64_t> seen;
  auto collect = [&](std::uint64_t k, std::uint64_t v) {
    EXPECT_EQ(v * 10, k);
    seen.push_back(k);
    return true;
  };
  EXPECT_EQ(f.tree.scan(12345, 3000, collect), 3000u);  // crosses several leaves
  ASSERT_EQ(seen.size(), 3000u);
  EXPECT_EQ(seen.front(), 12350u);
  for (std::size_t i = 1; i < seen.size(); ++i) ASSERT_EQ(seen[i], seen[i - 1] + 10);
  seen.clear();
  EXPECT_EQ(f.tree.scan(49980, 100, collect), 2u);  // runs off the end
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{49980, 49990}));
  EXPECT_EQ(f.tree.scan(50000, 100, collect), 0u);
  std::size_t calls = 0;
  EXPECT_EQ(f.tree.scan(0, 100, [&](std::uint64_t, std::uint64_t) { return ++calls < 7; }), 7u);
}

TEST(BTreeOperations, ScanCallbackMayModifyTheTree) {
  Fixture<std::uint64_t, std::uint64_t> f;
  for (std::uint64_t k = 0; k < 3000; ++k) f.tree.insert(k, k);
  std::size_t n = f.tree.scan(0, 3000, [&](std::uint64_t k, std::uint64_t) {
    EXPECT_TRUE(f.tree.remove(k));
    return true;
  });
  EXPECT_EQ(n, 3000u);
  EXPECT_EQ(f.tree.stats().entries, 0u);
  EXPECT_EQ(f.tree.validate(), "");
}

TEST(BTreeOperations, BulkLoadFillsLeavesToTheFillFactor) {
  Fixture<std::uint64_t, std::uint64_t> f;
  const std::size_t n = 200000;
  f.tree.bulk_load(
      n,
      [](std::size_t i, std::uint64_t& k, std::uint64_t& v) {
        k = i * 3;
        v = i;
      },
      0.66);
  ASSERT_EQ(f.tree.validate(), "");
  BTreeStats s = f.tree.stats();
  const std::size_t per_leaf = static_cast<std::size_t>(decltype(f.tree)::kLeafCapacity * 0.66);
  EXPECT_EQ(s.entries, n);
  EXPECT_EQ(s.leaves, (n + per_leaf - 1) / per_leaf);
  EXPECT_LE(s.max_leaf_entries, per_leaf);
  EXPECT_GE(s.min_leaf_entries, n / s.leaves) << "entries spread evenly over the leaves";
  std::uint64_t v = 0;
  EXPECT_TRUE(f.tree.lookup(3 * 123456, v));
  EXPECT_EQ(v, 123456u);
  EXPECT_FALSE(f.tree.lookup(3 * 123456 + 1, v));
  EXPECT_TRUE(f.tree.insert(1, 1));  // the loaded tree accepts inserts
  EXPECT_EQ(f.tree.validate(), "");
}

TEST(BTreeOperations, BulkLoadBuildsInnerLevelsAtTheFillFactor) {
  Fixture<WideKey, std::uint64_t> f;
  f.tree.bulk_load(
      2000,
      [](std::size_t i, WideKey& k, std::uint64_t& v) {
        k = WideKey(i);
        v = i;
      },
      1.0);
  ASSERT_EQ(f.tree.validate(), "");
  BTreeStats s = f.tree.stats();
  EXPECT_EQ(s.entries, 2000u);
  EXPECT_EQ(s.max_leaf_entries, decltype(f.tree)::kLeafCapacity);
  EXPECT_GE(s.height, 3u);
  std::uint64_t v = 0;
  for (std::uint64_t k = 0; k < 2000; k += 37) {
    ASSERT_TRUE(f.tree.lookup(WideKey(k), v));
    EXPECT_EQ(v, k);
  }
}

TEST(BTreeOperations, BulkLoadRejectsBadInput) {
  Fixture<std::uint64_t, std::uint64_t> f;
  auto ascending = [](std::size_t i, std::uint64_t& k, std::uint64_t& v) { k = v = i; };
  EXPECT_THROW(f.tree.bulk_load(10, ascending, 0.0), Error);
  EXPECT_THROW(f.tree.bulk_load(10, ascending, 1.5), Error);
  // Out of order at entry 1500: the first 1500 stay, the tree stays valid.
  EXPECT_THROW(
      f.tree.bulk_load(
          3000,
          [](std::size_t i, std::uint64_t& k, std::uint64_t& v) { k = v = (i == 1500 ? 0 : i); },
          0.5),
      Error);
  EXPECT_EQ(f.tree.validate(), "");
  EXPECT_EQ(f.tree.stats().entries, 1500u);
  EXPECT_THROW(f.tree.bulk_load(10, ascending, 0.66), Error) << "not empty";
}

TEST(BTreeOperations, LookupTouchesFewLinesOfAFullLeaf) {
  Fixture<std::uint64_t, std::uint64_t> f;
  f.tree.bulk_load(
      decltype(f.tree)::kLeafCapacity,
      [](std::size_t i, std::uint64_t& k, std::uint64_t& v) { k = v = i; }, 1.0);
  ASSERT_EQ(f.tree.stats().height, 1u);
  std::size_t worst = 0;
  for (std::uint64_t k = 0; k < decltype(f.tree)::kLeafCapacity; ++k) {
    f.access.log().clear();
    std::uint64_t v;
    ASSERT_TRUE(f.tree.lookup(k, v));
    worst = std::max(worst, f.access.log().lines.size());
    EXPECT_EQ(f.access.log().whole_pages, 0);
    EXPECT_TRUE(f.access.log().dirty.empty());
  }
  EXPECT_LE(worst, 12u) << "header + ~log2(1016) key probes + one value line";
}

TEST(BTreeOperations, PartReadsAndUpdatesTouchOnlyTheirBytes) {
  Fixture<std::uint32_t, Payload> f;
  for (std::uint32_t k = 0; k < 100; ++k) f.tree.insert(k, payload_for(k));
  char part[10];
  f.access.log().clear();
  ASSERT_TRUE(f.tree.lookup_part(42, 500, sizeof(part), part));
  EXPECT_EQ(std::memcmp(part, payload_for(42).data() + 500, sizeof(part)), 0);
  std::size_t lines_read = f.access.log().lines.size();
  EXPECT_LE(lines_read, 8u) << "16 keys per leaf: header, key lines, one value line";

  const char update[4] = {'a', 'b', 'c', 'd'};
  f.access.log().clear();
  ASSERT_TRUE(f.tree.update_part(42, 998, 2, update));
  ASSERT_EQ(f.access.log().dirty.size(), 1u);
  EXPECT_EQ(f.access.log().dirty[0].second, 2u) << "only the changed bytes are dirty";
  EXPECT_FALSE(f.tree.update_part(1000, 0, 2, update));
  Payload v;
  ASSERT_TRUE(f.tree.lookup(42, v));
  Payload expected = payload_for(42);
  expected[998] = 'a';
  expected[999] = 'b';
  EXPECT_EQ(v, expected);
}

TEST(BTreeOperations, PointUpdateDirtiesOnlyTheValue) {
  Fixture<std::uint64_t, std::uint64_t> f;
  for (std::uint64_t k = 0; k < 500; ++k) f.tree.insert(k, k);
  f.access.log().clear();
  ASSERT_TRUE(f.tree.update(77, 1));
  ASSERT_EQ(f.access.log().dirty.size(), 1u);
  EXPECT_EQ(
      f.access.log().dirty[0],
      std::make_pair(LeafLayout<std::uint64_t, std::uint64_t>::value_offset(77), std::uint32_t{8}));
}
