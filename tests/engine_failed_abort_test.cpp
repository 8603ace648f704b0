// An abort that fails (an undo step throws) leaves a transaction the manager can no longer
// carry: its undo records would stop being copied forward, and the next checkpoint would
// truncate them, so restart could not undo it. The manager therefore refuses new transactions
// and checkpoints until the database is reopened, and the undo records stay in the log.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "emulation/nvm_device.hpp"
#include "engine/durable_store.hpp"
#include "engine/log_manager.hpp"
#include "engine/transaction_manager.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using testing_support::TempDir;

// An undo target whose undo always fails, standing for an I/O error in the middle of an abort.
class FailingUndo final : public UndoTarget {
 public:
  std::uint32_t table_id() const override { return 1; }
  void apply_undo(TransactionState&, std::span<const std::byte>) override {
    throw std::runtime_error("undo failed");
  }
};

// Pages need nothing here: only the log and the manager are under test.
class NoPages final : public DurableStore {
 public:
  void checkpoint_pages() override { ++checkpoints; }
  void redo(Lsn, const RedoPageBytes&, std::span<const std::byte>) override {}
  int checkpoints = 0;
};

void expect_error_mentioning_reopen(const std::function<void()>& call) {
  try {
    call();
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reopen"), std::string::npos) << e.what();
  }
}

TEST(EngineFailedAbort, RefusesTransactionsAndCheckpointsAndKeepsTheUndoInTheLog) {
  TempDir dir(testing_support::kNvmBase, "tristore-failed-abort");
  NvmDeviceOptions options;
  options.path = dir.file("log.nvm");
  options.size_bytes = 1 << 20;
  options.create = true;
  NvmDevice device(options);
  auto log = LogManager::create(device, {device.base(), options.size_bytes});
  NoPages pages;
  TransactionManager manager(log.get(), &pages);

  // 1. A checkpoint works while every abort has succeeded.
  manager.checkpoint();
  EXPECT_EQ(pages.checkpoints, 1);

  // 2. One undo record whose undo throws: the abort fails and the state stays with the manager.
  FailingUndo failing;
  TransactionState& txn = manager.begin_autocommit();
  const std::array<std::byte, 16> undo{};
  manager.log_undo(txn, failing, undo);
  const Lsn undo_lsn = txn.undo.back().lsn;
  EXPECT_THROW(manager.abort(txn), std::runtime_error);
  EXPECT_FALSE(manager.needs_restart());

  // 3. The next transaction lets go of the failed one, and from then on nothing may truncate
  //    its undo record: new transactions and checkpoints are refused.
  expect_error_mentioning_reopen([&] { manager.begin_autocommit(); });
  EXPECT_TRUE(manager.needs_restart());
  expect_error_mentioning_reopen([&] { manager.checkpoint(); });
  expect_error_mentioning_reopen([&] { (void)manager.begin(); });
  EXPECT_EQ(pages.checkpoints, 1);
  EXPECT_LE(log->start_lsn(), undo_lsn);

  // 4. Restart finds the record: the reopened log still holds it.
  log.reset();
  auto reopened = LogManager::open(device, {device.base(), options.size_bytes});
  bool found = false;
  auto cursor = reopened->read_from_start();
  while (auto record = cursor.next())
    if (record->lsn == undo_lsn) found = record->type == LogRecordType::kUndoLogical;
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace tristore
