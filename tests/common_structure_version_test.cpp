// StructureVersion (common/structure_version.hpp), the seqlock over a B-tree's inner nodes
// that leaf splits beside changes take: a split begins only from the version its descent saw,
// one split at a time; a descent that saw a version before a split began, or while it ran,
// finds it moved; stable() waits out a split under way.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "common/structure_version.hpp"

namespace tristore {
namespace {

TEST(StructureVersion, ASplitBeginsOnlyFromTheVersionSeenAndMovesItForEveryDescentBefore) {
  StructureVersion version;
  const std::uint64_t seen = version.stable();
  EXPECT_TRUE(version.unchanged_since(seen));
  ASSERT_TRUE(version.try_begin_split(seen));
  EXPECT_FALSE(version.unchanged_since(seen)) << "a descent beside a split under way";
  EXPECT_FALSE(version.try_begin_split(seen)) << "a second split at once";
  version.end_split();
  EXPECT_FALSE(version.unchanged_since(seen)) << "a descent from before the split";
  const std::uint64_t after = version.stable();
  EXPECT_EQ(after, seen + 2);
  EXPECT_TRUE(version.unchanged_since(after));
  EXPECT_FALSE(version.try_begin_split(seen)) << "a split whose descent saw an older tree";
  EXPECT_TRUE(version.try_begin_split(after));
  version.end_split();
}

TEST(StructureVersion, StableWaitsOutASplitUnderWay) {
  StructureVersion version;
  ASSERT_TRUE(version.try_begin_split(version.stable()));
  std::uint64_t seen = 0;
  std::thread descent([&] { seen = version.stable(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  version.end_split();
  descent.join();
  EXPECT_EQ(seen, 2u) << "stable() returned the odd version of a split under way";
}

}  // namespace
}  // namespace tristore
