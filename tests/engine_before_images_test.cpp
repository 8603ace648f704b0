// Restart puts back the before-images of the nvm-direct operations a crash interrupted. Changes
// run side by side there, so one transaction's before-images and its operation's record can
// have other transactions' records between them: an operation is interrupted when its
// transaction logged nothing else after its before-images, whatever the others logged.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
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

// Records which before-images restart puts back, in order (page, offset).
class RecordingPages final : public DurableStore {
 public:
  void checkpoint_pages() override {}
  void redo(Lsn, const RedoPageBytes&, std::span<const std::byte>) override {}
  void restore_before_image(const RedoPageBytes& entry, std::span<const std::byte>) override {
    restored.emplace_back(entry.page_id, entry.offset);
  }
  std::vector<std::pair<PageId, std::uint32_t>> restored;
};

class BeforeImages : public ::testing::Test {
 protected:
  static TransactionState transaction(TxnId id) {
    return testing_support::LogOnly::transaction(id);
  }
  void before_image(TransactionState& txn, PageId page, std::uint32_t offset) {
    logged_.before_image(txn, page, offset);
  }
  void record(TransactionState& txn, LogRecordType type) {
    manager_->append_chained(txn, type, {});
  }

  // The log as a crash leaves it (everything appended made durable), reopened and recovered.
  std::vector<std::pair<PageId, std::uint32_t>> restart() {
    log_->persist_up_to(log_->end_lsn());
    manager_.reset();
    log_.reset();
    log_ = LogManager::open(*logged_.device, logged_.area());
    RecordingPages pages;
    TransactionManager manager(log_.get(), &pages);
    RestartReport report;
    manager.recover(report);
    EXPECT_EQ(report.before_images_restored, pages.restored.size());
    return pages.restored;
  }

  RecordingPages pages_;
  testing_support::LogOnly logged_{"tristore-before-images", pages_};
  std::unique_ptr<LogManager>& log_ = logged_.log;
  std::unique_ptr<TransactionManager>& manager_ = logged_.manager;
};

using Restored = std::vector<std::pair<PageId, std::uint32_t>>;

TEST_F(BeforeImages, AnOperationOfAnotherTransactionDoesNotCompleteThisOne) {
  TransactionState interrupted = transaction(1), other = transaction(2);
  before_image(interrupted, 7, 0);
  record(other, LogRecordType::kRedoOperation);
  EXPECT_EQ(restart(), (Restored{{7, 0}}));
}

TEST_F(BeforeImages, ItsOwnOperationRecordCompletesIt) {
  TransactionState completed = transaction(1), other = transaction(2);
  before_image(completed, 7, 0);
  before_image(other, 9, 64);
  record(completed, LogRecordType::kRedoOperation);
  EXPECT_EQ(restart(), (Restored{{9, 64}}));
}

TEST_F(BeforeImages, InterruptedOperationsOfSeveralTransactionsArePutBackNewestFirst) {
  TransactionState first = transaction(1), second = transaction(2);
  before_image(first, 7, 0);
  before_image(second, 9, 0);
  before_image(first, 7, 128);
  EXPECT_EQ(restart(), (Restored{{7, 128}, {9, 0}, {7, 0}}));
}

// An operation abandoned by an error ends with its transaction's next record (OperationLog
// logs an empty one): its before-images are not put back over later changes of the page.
TEST_F(BeforeImages, AnyLaterRecordOfTheTransactionEndsItsOperation) {
  TransactionState abandoned = transaction(1), committed = transaction(2);
  before_image(abandoned, 7, 0);
  before_image(committed, 9, 0);
  record(abandoned, LogRecordType::kRedoOperation);
  record(committed, LogRecordType::kCommit);
  EXPECT_EQ(restart(), Restored{});
}

// A loser whose undo waits for its table to be opened logs nothing at restart. Its
// before-images, put back once, must not be put back by the next restart too: over the page as
// the operations since (of tables opened meanwhile) left it, they would undo committed changes.
// Found by a review of the restart code: restart logged nothing after them.
TEST_F(BeforeImages, AreNotPutBackAgainByTheNextRestart) {
  TransactionState loser = transaction(1);
  logged_.insert_undo(loser);
  before_image(loser, 7, 0);
  EXPECT_EQ(restart(), (Restored{{7, 0}}));
  EXPECT_EQ(restart(), Restored{}) << "put back over what ran since the first restart";
}

}  // namespace
}  // namespace tristore
