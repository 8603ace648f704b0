// Restart appends records of its own: an abort record for each loser with nothing left to undo,
// and a record after the before-images it put back. On a log that a crash left full, such an
// append checkpoints, and a checkpoint keeps the log only for the losers it knows: so restart
// appends nothing before it has collected every loser. Found by a review of the restart code:
// it appended while it was still collecting them. Its checkpoint dropped a loser's records,
// that restart then failed to read them ("outside the log"), and the next one found no loser
// at all: its changes were never undone.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/durable_store.hpp"
#include "engine/log_manager.hpp"
#include "engine/log_record.hpp"
#include "engine/restart_report.hpp"
#include "engine/transaction_manager.hpp"
#include "engine/transaction_state.hpp"
#include "tests/engine_log_only.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

class CountingPages final : public DurableStore {
 public:
  void checkpoint_pages() override { ++checkpoints; }
  void redo(Lsn, const RedoPageBytes&, std::span<const std::byte>) override {}
  void restore_before_image(const RedoPageBytes&, std::span<const std::byte>) override {
    ++before_images_restored;
  }
  int checkpoints = 0;
  int before_images_restored = 0;
};

class RestartWithAFullLog : public ::testing::Test {
 protected:
  // Less than any record needs, so restart's first append finds the log full.
  static constexpr std::uint64_t kLeftFree = 40;

  static TransactionState transaction(TxnId id) {
    return testing_support::LogOnly::transaction(id);
  }
  // Records of no transaction, which restart reads past.
  void filler(std::uint64_t payload_bytes) {
    const std::vector<std::byte> payload(payload_bytes);
    log_->append(LogRecordType::kCommit, 0, kNoLsn, {std::span(payload)});
  }
  // The log keeps its start before this checkpoint, as a checkpoint leaves it when the live
  // undo before it had no room to be copied (and that transaction committed since): restart's
  // checkpoint may drop what lies before it.
  void checkpoint_keeping_the_start() {
    filler(256 * 1024);
    const Lsn begin = log_->append(LogRecordType::kCheckpointBegin, 0, kNoLsn);
    const CheckpointEnd end{.begin_lsn = begin, .active_count = 0};
    log_->append(LogRecordType::kCheckpointEnd, 0, kNoLsn, {bytes_of(end)});
    log_->persist_up_to(log_->end_lsn());
    log_->complete_checkpoint(begin, log_->start_lsn());
    ASSERT_LT(log_->start_lsn(), begin);
  }
  void fill_the_log() {
    while (log_->free_bytes() > kLeftFree + 4096) filler(4000);
    filler(log_->free_bytes() - kLeftFree - log_record_size(0));
    ASSERT_EQ(log_->free_bytes(), kLeftFree);
  }

  // The log as a crash leaves it (everything appended made durable), reopened and recovered.
  RestartReport restart(CountingPages& pages) {
    log_->persist_up_to(log_->end_lsn());
    manager_.reset();
    log_.reset();
    log_ = LogManager::open(*logged_.device, logged_.area());
    TransactionManager manager(log_.get(), &pages);
    RestartReport report;
    manager.recover(report);
    return report;
  }

  CountingPages pages_;
  testing_support::LogOnly logged_{"tristore-restart-full-log", pages_};
  std::unique_ptr<LogManager>& log_ = logged_.log;
  std::unique_ptr<TransactionManager>& manager_ = logged_.manager;
};

// Transaction 1 has nothing to undo, so restart aborts it, and the abort checkpoints: before
// transaction 2, a loser with undo, was collected, the checkpoint dropped its records.
TEST_F(RestartWithAFullLog, AFullLogDuringRestartKeepsTheLosersItHasNotCollectedYet) {
  checkpoint_keeping_the_start();
  TransactionState empty = transaction(1), loser = transaction(2);
  manager_->append_chained(empty, LogRecordType::kRedoOperation, {});
  logged_.insert_undo(loser);
  fill_the_log();

  CountingPages first_pages;
  const RestartReport first = restart(first_pages);
  EXPECT_EQ(first.losers, 1u);
  EXPECT_EQ(first.undo_records_pending, 1u);
  ASSERT_EQ(first_pages.checkpoints, 1) << "the scenario needs restart's abort to checkpoint";

  CountingPages second_pages;
  const RestartReport second = restart(second_pages);
  EXPECT_EQ(second.losers, 1u) << "the loser was lost with the log its checkpoint dropped";
  EXPECT_EQ(second.undo_records_pending, 1u);
}

// The record after an interrupted operation's before-images checkpoints the same way.
TEST_F(RestartWithAFullLog, TheRecordAfterPutBackBeforeImagesKeepsItsLoser) {
  checkpoint_keeping_the_start();
  TransactionState loser = transaction(1);
  logged_.insert_undo(loser);
  logged_.before_image(loser, 7);
  fill_the_log();

  CountingPages first_pages;
  const RestartReport first = restart(first_pages);
  EXPECT_EQ(first.losers, 1u);
  EXPECT_EQ(first_pages.before_images_restored, 1);
  ASSERT_EQ(first_pages.checkpoints, 1) << "the scenario needs restart's record to checkpoint";

  CountingPages second_pages;
  const RestartReport second = restart(second_pages);
  EXPECT_EQ(second.losers, 1u) << "the loser was lost with the log its checkpoint dropped";
  EXPECT_EQ(second.undo_records_pending, 1u);
  EXPECT_EQ(second_pages.before_images_restored, 0) << "put back over what ran since";
}

}  // namespace
}  // namespace tristore
