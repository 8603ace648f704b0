// Random operation sequences against std::map, on trees with small nodes (wide keys and
// values) so that splits, merges and root changes happen all the time.
#include <gtest/gtest.h>

#include <array>
#include <compare>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>

#include "btree/btree.hpp"
#include "tests/model_comparison.hpp"
#include "tests/test_support.hpp"
#include "tiers/main_memory_access.hpp"

using namespace tristore;
using testing_support::ModelComparison;
using testing_support::test_seed;

namespace {

struct WideKey {
  std::uint32_t value;
  std::array<char, 500> padding{};
  explicit WideKey(std::uint32_t v = 0) : value(v) {}
  bool operator==(const WideKey& other) const { return value == other.value; }
  auto operator<=>(const WideKey& other) const { return value <=> other.value; }
  friend std::ostream& operator<<(std::ostream& out, const WideKey& key) {
    return out << key.value;
  }
};
using Value = std::array<std::uint32_t, 100>;

Value value_for(std::uint32_t key, std::uint32_t version) {
  Value v;
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = key * 1000003u + version * 17u + i;
  return v;
}

// Random operations on the tree and the model; every answer must agree.
template <typename Tree>
void run_random_operations(Tree& tree, std::uint64_t seed, int operations,
                           std::uint32_t key_range) {
  std::mt19937_64 rng(seed);
  ModelComparison<Tree, WideKey, Value> check(tree);
  for (int op = 0; op < operations; ++op) {
    check.op = static_cast<std::uint64_t>(op);
    const WideKey k(static_cast<std::uint32_t>(rng() % key_range));
    const auto version = static_cast<std::uint32_t>(op);
    switch (rng() % 10) {
      case 0:
      case 1:
      case 2:
        check.insert(k, value_for(k.value, version));
        break;
      case 3:
      case 4:
        check.remove(k);
        break;
      case 5:
        check.update(k, value_for(k.value, version));
        break;
      case 6: {
        const std::uint32_t part = static_cast<std::uint32_t>(rng() % 100);
        check.update_part(k, part * sizeof(std::uint32_t), sizeof(version), &version);
        break;
      }
      case 7:
        check.scan(k, rng() % 60);
        break;
      default:
        check.lookup(k);
    }
    if (::testing::Test::HasFatalFailure()) return;
    if (op % 2000 == 0) {
      ASSERT_EQ(tree.validate(), "") << "at op " << op;
    }
  }
  ASSERT_EQ(tree.validate(), "");
  ASSERT_EQ(tree.stats().entries, check.model().size());
  // Drain: every remaining key is there and removable; the tree ends as one leaf.
  check.remove_all();
  EXPECT_EQ(tree.stats().height, 1u);
}

}  // namespace

TEST(BTreeRandomOpsProperty, MatchesStdMapWithSmallNodes) {
  const std::uint64_t seed = test_seed();
  for (std::uint64_t round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    MainMemoryAccess access(1ull << 30);
    Swip root = BTree<WideKey, Value, MainMemoryAccess>::create(access);
    BTree<WideKey, Value, MainMemoryAccess> tree(access, root);
    run_random_operations(tree, seed + round, 20000, round % 2 == 0 ? 3000 : 300);
    if (HasFatalFailure()) return;
    EXPECT_EQ(access.bytes_in_use(), kPageSize) << "every page but the root was freed";
  }
}

TEST(BTreeRandomOpsProperty, MatchesStdMapAfterABulkLoad) {
  const std::uint64_t seed = test_seed();
  MainMemoryAccess access(1ull << 30);
  Swip root = BTree<WideKey, Value, MainMemoryAccess>::create(access);
  BTree<WideKey, Value, MainMemoryAccess> tree(access, root);
  // Keys 0, 2, 4, ...: the random phase inserts between them and removes them.
  tree.bulk_load(
      1000,
      [](std::size_t i, WideKey& k, Value& v) {
        k = WideKey(static_cast<std::uint32_t>(2 * i));
        v = value_for(k.value, 0);
      },
      0.66);
  ASSERT_EQ(tree.validate(), "");
  for (std::uint32_t k = 0; k < 2000; k += 2) ASSERT_TRUE(tree.remove(WideKey(k)));
  run_random_operations(tree, seed, 20000, 2000);
}
