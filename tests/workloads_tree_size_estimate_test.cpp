#include <gtest/gtest.h>

#include "common/types.hpp"
#include "workloads/tree_size_estimate.hpp"

using namespace tristore;

TEST(WorkloadsTreeSizeEstimate, YcsbRowsAreTenPerLeafAtFillFactor066) {
  // 16 rows of 4 + 1000 bytes fit a leaf; 0.66 of that is 10: 2000 leaves, 3 inner nodes
  // (fanout 894) and a root. The main-memory engine reports exactly these 2004 pages.
  EXPECT_EQ(estimated_tree_bytes(20'000, 4, 1000, 0.66), 2004 * kPageSize);
}

TEST(WorkloadsTreeSizeEstimate, FullLeavesHoldSixteenRows) {
  // 1000 leaves under one root (fanout 1354 at fill 1).
  EXPECT_EQ(estimated_tree_bytes(16'000, 4, 1000, 1.0), (1000 + 1) * kPageSize);
}

TEST(WorkloadsTreeSizeEstimate, TinyTablesTakeOnePage) {
  EXPECT_EQ(estimated_tree_bytes(1, 8, 8, 0.66), kPageSize);
  EXPECT_EQ(estimated_tree_bytes(0, 8, 8, 0.66), kPageSize);
}

TEST(WorkloadsTreeSizeEstimate, GrowsWithRecordsAndShrinksWithFill) {
  EXPECT_LT(estimated_tree_bytes(1'000'000, 8, 8, 0.66),
            estimated_tree_bytes(2'000'000, 8, 8, 0.66));
  EXPECT_GT(estimated_tree_bytes(1'000'000, 4, 1000, 0.5),
            estimated_tree_bytes(1'000'000, 4, 1000, 1.0));
}
