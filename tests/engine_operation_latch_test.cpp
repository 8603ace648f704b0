// OperationLatch::alone_here (engine/operation_latch.hpp): a thread that has had the database
// to itself for kAloneAfter questions in a row (after a first that has nothing to compare
// with) is told so, and runs its operations exclusive;
// another thread entering in any mode (changes, exclusive, shared), or waiting to, makes the
// next answer false and the count start again (one seen inside, the next kNotAloneFor answers
// too). Reads outside transactions keep to the mode
// they chose for a while (changes_lately), and changers are
// counted in slots of their own, which readers and the exclusive holder wait for.
#include "engine/operation_latch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace tristore {
namespace {

constexpr unsigned kAfter = OperationLatch::kAloneAfter;

// Asks until the answer is yes; how many questions that took.
unsigned questions_until_alone(const OperationLatch& latch) {
  for (unsigned asked = 1; asked <= 10 * kAfter; ++asked)
    if (latch.alone_here()) return asked;
  return 0;
}

// What another thread does on the latch, run to its end before the next question.
template <typename Visit>
void from_another_thread(Visit&& visit) {
  std::thread other(std::forward<Visit>(visit));
  other.join();
}

TEST(OperationLatchAlone, AThreadAloneIsToldSoAfterItsQuestionsInARow) {
  OperationLatch latch;
  {
    const OperationLatch::Changes latched(latch);  // it has entered, as an operation would
  }
  EXPECT_EQ(questions_until_alone(latch), kAfter + 1);
  EXPECT_TRUE(latch.alone_here()) << "and stays alone while nobody else comes";
}

TEST(OperationLatchAlone, AnotherThreadEnteringInAnyModeEndsIt) {
  OperationLatch latch;
  { const OperationLatch::Exclusive latched(latch); }
  ASSERT_EQ(questions_until_alone(latch), kAfter + 1);
  from_another_thread([&] { const OperationLatch::Changes latched(latch); });
  EXPECT_FALSE(latch.alone_here()) << "a changer came";
  {
    const OperationLatch::Exclusive latched(latch);  // this thread enters again
  }
  EXPECT_EQ(questions_until_alone(latch), kAfter) << "the count starts again";
  from_another_thread([&] { const OperationLatch::Exclusive latched(latch); });
  EXPECT_FALSE(latch.alone_here()) << "an exclusive holder came";
  { const OperationLatch::Exclusive latched(latch); }
  ASSERT_EQ(questions_until_alone(latch), kAfter);
  from_another_thread([&] { const OperationLatch::Shared latched(latch); });
  EXPECT_FALSE(latch.alone_here()) << "a reader came (its slot moved)";
  EXPECT_EQ(questions_until_alone(latch), kAfter) << "the count starts again";
}

// Runs ask() on this thread while another thread holds the latch for changes.
template <typename Ask>
void while_another_changes(OperationLatch& latch, Ask&& ask) {
  std::atomic<int> step{0};
  std::thread other([&] {
    const OperationLatch::Changes latched(latch);
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
  });
  while (step.load() != 1) std::this_thread::yield();
  ask();
  step = 2;
  other.join();
}

TEST(OperationLatchAlone, NotAloneWhileAnotherThreadIsInside) {
  OperationLatch latch;
  { const OperationLatch::Exclusive latched(latch); }
  ASSERT_EQ(questions_until_alone(latch), kAfter + 1);
  while_another_changes(latch, [&] {
    for (unsigned i = 0; i < 2 * kAfter; ++i) EXPECT_FALSE(latch.alone_here()) << i;
  });
}

// Once another thread was seen inside, the next kNotAloneFor questions do not look at the
// others' slots: they say no even after it has left, and the count starts after them.
TEST(OperationLatchAlone, AThreadSeenInsideKeepsTheAnswerNoForAWhile) {
  OperationLatch latch;
  { const OperationLatch::Exclusive latched(latch); }
  ASSERT_EQ(questions_until_alone(latch), kAfter + 1);
  while_another_changes(latch, [&] { EXPECT_FALSE(latch.alone_here()) << "a changer is inside"; });
  EXPECT_EQ(questions_until_alone(latch), OperationLatch::kNotAloneFor + kAfter + 1);
}

TEST(OperationLatchAlone, AThreadOnTwoDatabasesIsAloneOnNeitherWhileItAlternates) {
  OperationLatch first, second;
  for (unsigned i = 0; i < 4 * kAfter; ++i) {
    EXPECT_FALSE(first.alone_here()) << i;
    EXPECT_FALSE(second.alone_here()) << i;
  }
}

// A read outside transactions takes the latch for changes for a while after changers were
// seen inside (OperationLatch::changes_lately), so that readers and changers do not take turns
// between shared mode and changes mode: yes for kLately questions once changers were seen,
// by the question itself or by a shared hold that had to wait for them, and no for kLately
// questions once none were.
TEST(OperationLatchLately, ReadsKeepToTheModeTheyChoseForAWhile) {
  constexpr int kLately = OperationLatch::kLately;
  OperationLatch latch;
  std::atomic<int> step{0};
  std::thread changer([&] {
    while (step.load() != 1) std::this_thread::yield();
    {
      const OperationLatch::Changes latched(latch);
      step = 2;
      while (step.load() != 3) std::this_thread::yield();
    }
    step = 4;  // left
    while (step.load() != 5) std::this_thread::yield();
    const OperationLatch::Changes latched(latch);
    step = 6;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // while the reader waits
  });
  EXPECT_FALSE(latch.changes_lately()) << "no changer inside";
  step = 1;
  while (step.load() != 2) std::this_thread::yield();
  for (int i = 0; i < kLately; ++i)
    EXPECT_FALSE(latch.changes_lately()) << "question " << i << " keeps to the no it chose";
  EXPECT_TRUE(latch.changes_lately()) << "looks again: a changer is inside";
  step = 3;
  for (int i = 0; i < kLately; ++i)
    EXPECT_TRUE(latch.changes_lately()) << "question " << i << " keeps to the yes it chose";
  while (step.load() != 4) std::this_thread::yield();
  EXPECT_FALSE(latch.changes_lately()) << "looks again: nobody inside";
  step = 5;
  while (step.load() != 6) std::this_thread::yield();
  { const OperationLatch::Shared latched(latch); }  // waits for the changer to leave
  changer.join();
  for (int i = 0; i < kLately; ++i)
    EXPECT_TRUE(latch.changes_lately()) << "question " << i << " after waiting for a changer";
  OperationLatch other;
  EXPECT_FALSE(other.changes_lately()) << "what this thread saw on one latch is that latch's";
}

// Changers announce themselves each in a slot of their own: they are counted (the log's room
// beside changes is reserved per changer, up to changers_at_most, one per slot entered), and a
// reader wanting the latch shared and a thread wanting it exclusive wait until the last has left.
TEST(OperationLatchChangers, ChangersInSlotsAreCountedAndKeepReadersAndTheExclusiveOut) {
  constexpr int kChangers = 3;
  OperationLatch latch;
  std::atomic<int> inside{0};
  std::atomic<bool> leave{false};
  std::vector<std::thread> changers;
  for (int c = 0; c < kChangers; ++c)
    changers.emplace_back([&] {
      const OperationLatch::Changes latched(latch);
      inside.fetch_add(1);
      while (!leave.load()) std::this_thread::yield();
    });
  while (inside.load() != kChangers) std::this_thread::yield();
  EXPECT_EQ(latch.changers(), std::uint32_t{kChangers});
  EXPECT_GE(latch.changers_at_most(), std::uint32_t{kChangers}) << "a bound, never fewer";
  EXPECT_TRUE(latch.changes_inside());
  std::atomic<bool> read{false}, alone{false};
  std::thread reader([&] {
    const OperationLatch::Shared latched(latch);
    read = true;
  });
  std::thread exclusive([&] {
    const OperationLatch::Exclusive latched(latch);
    alone = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(read.load()) << "a reader came in beside the changers";
  EXPECT_FALSE(alone.load()) << "the exclusive holder came in beside the changers";
  leave = true;
  for (std::thread& thread : changers) thread.join();
  reader.join();
  exclusive.join();
  EXPECT_TRUE(read.load());
  EXPECT_TRUE(alone.load());
  EXPECT_EQ(latch.changers(), 0u);
  EXPECT_GE(latch.changers_at_most(), std::uint32_t{kChangers})
      << "one per slot entered: the bound reads none of the slots";
}

}  // namespace
}  // namespace tristore
