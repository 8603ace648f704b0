// LiveUndoCount (engine/live_undo_count.hpp): what the room checks beside changes read is
// never below the live undo, and at most two chunks per thread slot above it; the exclusive
// holder gets the live undo exactly; threads adding and taking away beside each other (more
// threads than cores) leave it exact once the credits are taken back.
#include "engine/live_undo_count.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "tests/test_support.hpp"

namespace tristore {
namespace {

constexpr std::uint64_t kChunk = LiveUndoCount::kChunk;

TEST(LiveUndoCount, BesideAThreadTakesAChunkOnlyWhenItsCreditRunsOut) {
  LiveUndoCount count;
  count.add_beside(100);
  EXPECT_EQ(count.at_least(), kChunk);  // one chunk taken, 100 bytes of it used
  count.add_beside(kChunk - 100);
  EXPECT_EQ(count.at_least(), kChunk);  // the rest of the credit, nothing more taken
  count.add_beside(1);
  EXPECT_EQ(count.at_least(), 2 * kChunk);
  count.add_beside(3 * kChunk);  // more than a chunk at once: as much as is missing
  EXPECT_EQ(count.at_least(), 2 * kChunk + 3 * kChunk - (kChunk - 1));
  EXPECT_EQ(count.exact_exclusive(), 4 * kChunk + 1);
  EXPECT_EQ(count.at_least(), 4 * kChunk + 1);
}

TEST(LiveUndoCount, TakingAwayKeepsAtMostTwoChunksOfCredit) {
  LiveUndoCount count;
  count.add_beside(5 * kChunk);
  count.remove_beside(kChunk);  // credit kChunk: kept
  EXPECT_EQ(count.at_least(), 5 * kChunk);
  count.remove_beside(kChunk);  // credit 2 * kChunk: kept
  EXPECT_EQ(count.at_least(), 5 * kChunk);
  count.remove_beside(1);  // beyond two chunks: all but one given back
  EXPECT_EQ(count.at_least(), 3 * kChunk - 1 + kChunk);
  count.remove_beside(3 * kChunk - 1);
  EXPECT_EQ(count.at_least(), kChunk);
  EXPECT_EQ(count.exact_exclusive(), 0u);
  EXPECT_EQ(count.at_least(), 0u);
}

TEST(LiveUndoCount, TheExclusiveHolderCountsBesideTheCredits) {
  LiveUndoCount count;
  count.add_beside(10);
  count.add_exclusive(1000);
  EXPECT_EQ(count.at_least(), kChunk + 1000);
  count.remove_exclusive(400);
  EXPECT_EQ(count.exact_exclusive(), 610u);
  count.remove_beside(10);  // the credit was taken back: this thread takes a chunk anew
  EXPECT_EQ(count.exact_exclusive(), 600u);
}

// Each thread runs "transactions" that add a few undo records and then take them all away
// (commit), or one by one (an abort's steps), in a seeded random order. After each of its own
// steps a thread checks that the count is at least its own live undo (the others' is never
// negative). Between rounds, with every transaction ended, the count is at most two chunks
// of credit per thread, and exactly nothing once the credits are taken back.
TEST(LiveUndoCount, ThreadsBesideEachOtherNeverCountBelowTheLiveUndo) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr unsigned kThreads = 6;  // more than this machine's cores
  constexpr int kRounds = 20;
  constexpr int kTransactionsPerRound = 1000;
  LiveUndoCount count;
  std::atomic<bool> below{false};
  std::vector<std::uint64_t> quiet_counts;  // at_least() between rounds
  std::vector<std::uint64_t> quiet_exact;   // exact_exclusive() then
  std::barrier round_ended(kThreads, [&]() noexcept {
    quiet_counts.push_back(count.at_least());
    quiet_exact.push_back(count.exact_exclusive());
  });
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(seed + t);
      for (int round = 0; round < kRounds; ++round) {
        for (int i = 0; i < kTransactionsPerRound; ++i) {
          std::vector<std::uint64_t> records;
          std::uint64_t live = 0;
          const int steps = 1 + static_cast<int>(random() % 12);
          for (int s = 0; s < steps; ++s) {
            const std::uint64_t bytes = 48 + random() % (random() % 8 == 0 ? 3 * kChunk : 700);
            count.add_beside(bytes);
            records.push_back(bytes);
            live += bytes;
            if (count.at_least() < live) below = true;
          }
          if (random() % 4 == 0) {  // abort
            for (; !records.empty(); records.pop_back()) {
              count.remove_beside(records.back());
              live -= records.back();
              if (count.at_least() < live) below = true;
            }
          } else {
            count.remove_beside(live);
          }
        }
        round_ended.arrive_and_wait();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(below) << "the count fell below a thread's own live undo";
  ASSERT_EQ(quiet_counts.size(), static_cast<std::size_t>(kRounds));
  for (int round = 0; round < kRounds; ++round) {
    EXPECT_LE(quiet_counts[round], kThreads * 2 * kChunk) << "round " << round;
    EXPECT_EQ(quiet_exact[round], 0u) << "round " << round;
  }
}

}  // namespace
}  // namespace tristore
