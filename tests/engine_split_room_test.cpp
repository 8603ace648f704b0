// A leaf split beside changes logs up to three pages more than the change of one entry that
// room_beside counts each changer for, so each split takes that room first
// (TransactionManager::take_split_room_beside) and gives it back after its record: a split is
// refused where only a change fits, splits under way count against each other and against the
// changers that check after them, and threads taking room side by side never hold more than
// the log has.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "engine/durable_store.hpp"
#include "engine/log_manager.hpp"
#include "engine/logged_access.hpp"
#include "engine/operation_latch.hpp"
#include "engine/transaction_manager.hpp"
#include "engine/transaction_state.hpp"
#include "tests/engine_log_only.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

class NoPages final : public DurableStore {
 public:
  void checkpoint_pages() override {}
  void redo(Lsn, const RedoPageBytes&, std::span<const std::byte>) override {}
};

constexpr std::uint64_t kSplit = OperationLog<BufferManager>::kLeafSplitBytes;

class SplitRoom : public ::testing::Test {
 protected:
  SplitRoom() { txn_.reset(1); }

  // Fills the log with 1 KiB records until `fits` no longer holds.
  template <typename Fits>
  void fill_while(Fits&& fits) {
    const std::vector<std::byte> payload(1024);
    while (fits()) manager_->append_chained(txn_, LogRecordType::kRedoOperation, {payload});
  }
  bool take() { return manager_->take_split_room_beside(kSplit); }
  void give_back() { manager_->give_back_split_room_beside(kSplit); }

  NoPages pages_;
  testing_support::LogOnly logged_{"tristore-split-room", pages_};
  std::unique_ptr<LogManager>& log_ = logged_.log;
  std::unique_ptr<TransactionManager>& manager_ = logged_.manager;
  TransactionState txn_;
};

TEST_F(SplitRoom, ASplitIsRefusedWhereOnlyAChangeFitsAndTakesNothingThen) {
  const OperationLatch::Changes changing(manager_->latch());
  fill_while([&] {
    if (!take()) return false;
    give_back();
    return true;
  });
  // A change of one entry still fits: only the split's pages do not.
  EXPECT_TRUE(manager_->log_room_beside());
  EXPECT_GE(log_->free_bytes(),
            TransactionManager::kBesideChangeBound + TransactionManager::kSmallRecordsRoom);
  EXPECT_LT(log_->free_bytes(), TransactionManager::kBesideChangeBound +
                                    TransactionManager::kSmallRecordsRoom + kSplit);
  // The refused split left nothing taken: the changers' room is as before.
  EXPECT_FALSE(take());
  EXPECT_TRUE(manager_->log_room_beside());
}

TEST_F(SplitRoom, SplitsUnderWayCountAgainstEachOtherAndAgainstChangersCheckingAfterThem) {
  const OperationLatch::Changes changing(manager_->latch());
  // Until two splits no longer fit side by side.
  fill_while([&] {
    if (!take()) return false;
    const bool second = take();
    give_back();
    if (second) give_back();
    return second;
  });
  ASSERT_TRUE(take());
  EXPECT_FALSE(take()) << "the second split fitted only without the first's room";
  give_back();
  ASSERT_TRUE(take()) << "room given back is room again";
  // A changer checking now counts the split's room too: fill until it does not fit beside it.
  fill_while([&] { return manager_->log_room_beside(); });
  give_back();
  EXPECT_TRUE(manager_->log_room_beside()) << "the split's room, given back, fits a change";
}

// Four threads take and give back room where two splits fit: never more than two hold it at
// once (each adds its room before it checks, so of two that overlap the later sees both).
TEST_F(SplitRoom, ThreadsTakingRoomSideBySideNeverHoldMoreThanTheLogHas) {
  fill_while([&] {
    bool all = true;
    int taken = 0;
    for (; taken < 3 && all; ++taken) all = take();
    for (int i = 0; i < taken - (all ? 0 : 1); ++i) give_back();
    return all;
  });
  ASSERT_TRUE(take() && take());
  EXPECT_FALSE(take());
  give_back();
  give_back();
  std::atomic<int> holding{0}, most{0};
  std::atomic<std::uint64_t> taken{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        if (!take()) {
          refused.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        const int now = holding.fetch_add(1) + 1;
        for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
        }
        taken.fetch_add(1, std::memory_order_relaxed);
        holding.fetch_sub(1);
        give_back();
      }
    });
  for (std::thread& thread : threads) thread.join();
  std::printf("taken %llu, refused %llu, most held at once %d\n",
              static_cast<unsigned long long>(taken.load()),
              static_cast<unsigned long long>(refused.load()), most.load());
  EXPECT_LE(most.load(), 2);
  EXPECT_GT(taken.load(), 0u);
  EXPECT_TRUE(take() && take()) << "every split's room was given back";
}

}  // namespace
}  // namespace tristore
