// OperationLatch::alone_here (engine/operation_latch.hpp): a thread that has had the database
// to itself for kAloneAfter questions in a row (after a first that has nothing to compare
// with) is told so, and runs its operations exclusive;
// another thread entering in any mode (changes, exclusive, shared), or waiting to, makes the
// next answer false and the count start again.
#include "engine/operation_latch.hpp"

#include <gtest/gtest.h>

#include <thread>

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

TEST(OperationLatchAlone, NotAloneWhileAnotherThreadIsInside) {
  OperationLatch latch;
  { const OperationLatch::Exclusive latched(latch); }
  ASSERT_EQ(questions_until_alone(latch), kAfter + 1);
  std::atomic<int> step{0};
  std::thread other([&] {
    const OperationLatch::Changes latched(latch);
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
  });
  while (step.load() != 1) std::this_thread::yield();
  for (unsigned i = 0; i < 2 * kAfter; ++i) EXPECT_FALSE(latch.alone_here()) << i;
  step = 2;
  other.join();
}

TEST(OperationLatchAlone, AThreadOnTwoDatabasesIsAloneOnNeitherWhileItAlternates) {
  OperationLatch first, second;
  for (unsigned i = 0; i < 4 * kAfter; ++i) {
    EXPECT_FALSE(first.alone_here()) << i;
    EXPECT_FALSE(second.alone_here()) << i;
  }
}

}  // namespace
}  // namespace tristore
