#include "emulation/llc_simulator.hpp"

#include <gtest/gtest.h>

#include <random>

#include "emulation/tsc.hpp"
#include "test_support.hpp"

namespace tristore {
namespace {

TEST(EmulationLlcSimulator, SizeIsSetsTimesWaysTimesLines) {
  SimulatedLlc llc(1 << 20, 16);
  EXPECT_EQ(llc.ways(), 16u);
  EXPECT_EQ(llc.sets(), 1024u);
  EXPECT_EQ(llc.bytes(), 1u << 20);
}

TEST(EmulationLlcSimulator, MachineLlcSizeIsDetected) {
  EXPECT_GT(SimulatedLlc::machine_llc_bytes(), 0u);
  SimulatedLlc llc;
  EXPECT_GE(llc.bytes(), 64u * 16);
}

TEST(EmulationLlcSimulator, SecondAccessHits) {
  SimulatedLlc llc(64 << 10, 16);
  EXPECT_FALSE(llc.access(7));
  EXPECT_TRUE(llc.access(7));
  EXPECT_FALSE(llc.access(8));
}

TEST(EmulationLlcSimulator, SeventeenthLineOfASetEvictsTheLeastRecentlyUsed) {
  SimulatedLlc llc(64 << 10, 16);  // 64 sets
  const std::uint64_t sets = llc.sets();
  for (std::uint64_t i = 0; i < 16; ++i) EXPECT_FALSE(llc.access(i * sets));
  EXPECT_TRUE(llc.access(0));           // line 0 becomes most recently used
  EXPECT_FALSE(llc.access(16 * sets));  // evicts line 1*sets, the LRU one
  EXPECT_TRUE(llc.access(0));
  EXPECT_FALSE(llc.access(1 * sets));
  EXPECT_TRUE(llc.access(16 * sets));
}

// access_lines takes each stripe's latch once per run of lines in it: it must look up every
// line as access() does, also across a stripe's end and where the sets wrap around to 0.
// 320 KiB of 16 ways: 320 sets, so the last stripe is short (64 sets per stripe).
TEST(EmulationLlcSimulator, AccessLinesCountsTheMissesOfAccessLineByLine) {
  SimulatedLlc by_range(320 << 10, 16), by_line(320 << 10, 16);
  ASSERT_EQ(by_range.sets(), 320u);
  const std::uint64_t seed = testing_support::test_seed();
  std::mt19937_64 random(seed);
  for (int request = 0; request < 4000; ++request) {
    const std::uint64_t first = random() % 20000;
    const std::uint64_t count = 1 + random() % 700;  // up to two wraps of the sets
    std::uint64_t misses = 0;
    for (std::uint64_t line = first; line < first + count; ++line)
      misses += by_line.access(line) ? 0 : 1;
    ASSERT_EQ(by_range.access_lines(first, count), misses)
        << "request " << request << " lines " << first << "+" << count << " (seed " << seed << ")";
  }
}

TEST(EmulationLlcSimulator, ClearForgetsEverything) {
  SimulatedLlc llc(64 << 10, 16);
  llc.access(3);
  llc.clear();
  EXPECT_FALSE(llc.access(3));
}

TEST(EmulationTsc, CalibrationGivesAPlausibleFrequency) {
  const TscClock clock = TscClock::calibrate();
  EXPECT_GT(clock.ticks_per_ns(), 0.1);
  EXPECT_LT(clock.ticks_per_ns(), 10.0);
  EXPECT_EQ(clock.ticks(0), 0u);
  const std::uint64_t before = TscClock::now();
  clock.spin_ns(1000);
  EXPECT_GE(TscClock::now() - before, clock.ticks(1000));
}

}  // namespace
}  // namespace tristore
