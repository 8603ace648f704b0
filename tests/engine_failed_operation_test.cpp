// An operation that fails midway is logged as far as it got (OperationLog::abandon), its
// table's new root included: an insert that grew the root and then failed logged the pages but
// not the root, and after a crash restart took the catalog's root, the old root, now holding
// half its keys (found by a review of the B-tree). The failure is a key comparison that
// throws, where an I/O error or a damaged page could.
#include <gtest/gtest.h>

#include <compare>
#include <cstdint>
#include <set>

#include "architecture_test_name.hpp"
#include "btree/node_layout.hpp"
#include "common/error.hpp"
#include "engine/database.hpp"
#include "engine/table.hpp"
#include "tests/engine_open_support.hpp"

namespace tristore {
namespace {

using testing_support::DatabaseFiles;

// Counts this thread's comparisons; throws at the armed one. 64 bytes, so that a root full of
// leaves full of rows is a small table.
thread_local std::uint64_t comparisons = 0;
thread_local std::uint64_t throw_at = 0;  // 0: never
struct WideKey {
  std::uint64_t value;
  std::uint64_t pad[7];
  friend bool operator==(const WideKey& a, const WideKey& b) { return a.value == b.value; }
  friend std::strong_ordering operator<=>(const WideKey& a, const WideKey& b) {
    if (++comparisons == throw_at) throw Error("the armed comparison");
    return a.value <=> b.value;
  }
};
WideKey key(std::uint64_t value) { return WideKey{value, {}}; }

class FailedOperation : public ::testing::TestWithParam<Architecture> {};

TEST_P(FailedOperation, AnInsertThatFailsAfterTheRootGrewLogsTheNewRoot) {
  // A full root over full leaves: the next insert grows the root, splits the old one, and
  // descends through the new root, where it fails at its first comparison.
  constexpr std::uint64_t kRows = std::uint64_t{InnerLayout<WideKey>::kCapacity + 1} *
                                  LeafLayout<WideKey, std::uint64_t>::kCapacity;
  DatabaseFiles files("tristore-failed-operation");
  Config config = open_test::small_config(GetParam(), files, OpenMode::kCreateReplacing);
  config.nvm_bytes = 32 * kMiB;
  config.ssd_bytes = 64 * kMiB;
  config.checkpoint_interval_bytes = 1 << 30;  // none after the load
  {
    auto db = Database::open(config);
    auto table = db->create_table<WideKey, std::uint64_t>("rows");
    table.bulk_load(
        kRows,
        [](std::size_t i, WideKey& k, std::uint64_t& v) {
          k = key(2 * i);
          v = i;
        },
        1.0);
    std::uint64_t seen = 0;
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(table.get(key(0), seen));  // alone: exclusive
    comparisons = 0;
    table.get(key(2 * kRows), seen);
    const std::uint64_t to_its_leaf = comparisons;  // the insert's first descent, the same
    comparisons = 0;
    throw_at = to_its_leaf + 1;
    EXPECT_THROW(table.insert(key(2 * kRows), 1), Error);
    ASSERT_GT(comparisons, to_its_leaf) << "it failed before the root grew";
    throw_at = 0;
    ASSERT_TRUE(table.update(key(0), 7));  // a commit: the failed insert's record is durable
    db->simulate_crash_on_close();
  }
  config.open_mode = OpenMode::kOpenExisting;
  auto db = Database::open(config);
  auto table = db->open_table<WideKey, std::uint64_t>("rows");
  std::uint64_t found = 0;
  bool in_order = true;
  table.scan(key(0), SIZE_MAX, [&](const WideKey& k, const std::uint64_t&) {
    in_order = in_order && k.value == 2 * found;
    ++found;
    return true;
  });
  EXPECT_EQ(found, kRows) << "rows lost with the root the log did not name";
  EXPECT_TRUE(in_order);
}

INSTANTIATE_TEST_SUITE_P(Durable, FailedOperation, testing::ValuesIn(open_test::kDurable),
                         testing_support::ArchitectureTestName{});

}  // namespace
}  // namespace tristore
