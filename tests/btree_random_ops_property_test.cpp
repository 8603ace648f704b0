// Random operation sequences against std::map, on trees with small nodes (wide keys and
// values) so that splits, merges and root changes happen all the time.
#include <gtest/gtest.h>

#include <array>
#include <compare>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <string>

#include "btree/btree.hpp"
#include "tiers/main_memory_access.hpp"

using namespace tristore;

namespace {

std::uint64_t test_seed() {
  const char* env = std::getenv("TRISTORE_SEED");
  std::uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("seed %llu (replay with TRISTORE_SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

struct WideKey {
  std::uint32_t value;
  std::array<char, 500> padding{};
  explicit WideKey(std::uint32_t v = 0) : value(v) {}
  bool operator==(const WideKey& other) const { return value == other.value; }
  auto operator<=>(const WideKey& other) const { return value <=> other.value; }
};
using Value = std::array<std::uint32_t, 100>;

Value value_for(std::uint32_t key, std::uint32_t version) {
  Value v;
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = key * 1000003u + version * 17u + i;
  return v;
}

// Applies one random operation to the tree and the model and compares the results.
template <typename Tree>
void run_random_operations(Tree& tree, std::uint64_t seed, int operations,
                           std::uint32_t key_range) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::map<std::uint32_t, Value> model;
  auto random_key = [&] { return static_cast<std::uint32_t>(rng() % key_range); };
  for (int op = 0; op < operations; ++op) {
    std::uint32_t k = random_key();
    switch (rng() % 10) {
      case 0:
      case 1:
      case 2: {
        Value v = value_for(k, static_cast<std::uint32_t>(op));
        bool inserted = model.emplace(k, v).second;
        ASSERT_EQ(tree.insert(WideKey(k), v), inserted) << "insert " << k << " at op " << op;
        break;
      }
      case 3:
      case 4: {
        ASSERT_EQ(tree.remove(WideKey(k)), model.erase(k) == 1)
            << "remove " << k << " at op " << op;
        break;
      }
      case 5: {
        Value v = value_for(k, static_cast<std::uint32_t>(op));
        auto it = model.find(k);
        ASSERT_EQ(tree.update(WideKey(k), v), it != model.end()) << "update at op " << op;
        if (it != model.end()) it->second = v;
        break;
      }
      case 6: {
        std::uint32_t part = static_cast<std::uint32_t>(rng() % 100);
        std::uint32_t bytes = static_cast<std::uint32_t>(op);
        auto it = model.find(k);
        ASSERT_EQ(tree.update_part(WideKey(k), part * 4, 4, &bytes), it != model.end());
        if (it != model.end()) it->second[part] = bytes;
        break;
      }
      case 7: {
        std::size_t limit = rng() % 60;
        auto it = model.lower_bound(k);
        std::size_t visited = tree.scan(WideKey(k), limit, [&](const WideKey& key, const Value& v) {
          EXPECT_TRUE(it != model.end());
          if (it == model.end()) return false;
          EXPECT_EQ(key.value, it->first);
          EXPECT_TRUE(v == it->second);
          ++it;
          return true;
        });
        ASSERT_EQ(visited,
                  std::min<std::size_t>(limit, std::distance(model.lower_bound(k), model.end())))
            << "scan at op " << op;
        break;
      }
      default: {
        Value v{};
        auto it = model.find(k);
        ASSERT_EQ(tree.lookup(WideKey(k), v), it != model.end())
            << "lookup " << k << " at op " << op;
        if (it != model.end()) {
          ASSERT_TRUE(v == it->second) << "value of " << k << " at op " << op;
        }
      }
    }
    if (op % 2000 == 0) {
      ASSERT_EQ(tree.validate(), "") << "at op " << op;
    }
  }
  ASSERT_EQ(tree.validate(), "");
  ASSERT_EQ(tree.stats().entries, model.size());
  // Drain: every remaining key is there and removable; the tree ends as one leaf.
  for (auto& [k, v] : model) ASSERT_TRUE(tree.remove(WideKey(k)));
  EXPECT_EQ(tree.stats().height, 1u);
}

}  // namespace

TEST(BTreeRandomOpsProperty, MatchesStdMapWithSmallNodes) {
  std::uint64_t seed = test_seed();
  for (std::uint64_t round = 0; round < 4; ++round) {
    MainMemoryAccess access(1ull << 30);
    Swip root = BTree<WideKey, Value, MainMemoryAccess>::create(access);
    BTree<WideKey, Value, MainMemoryAccess> tree(access, root);
    run_random_operations(tree, seed + round, 20000, round % 2 == 0 ? 3000 : 300);
    if (HasFatalFailure()) return;
    EXPECT_EQ(access.bytes_in_use(), kPageSize) << "every page but the root was freed";
  }
}

TEST(BTreeRandomOpsProperty, MatchesStdMapAfterABulkLoad) {
  std::uint64_t seed = test_seed();
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
