#pragma once
// A transaction manager over a log of its own on an emulated NVM device, with no database
// around it: for tests of what the log and the transaction manager do by themselves.
#include <cstdint>
#include <memory>
#include <span>

#include "emulation/nvm_device.hpp"
#include "engine/durable_store.hpp"
#include "engine/log_manager.hpp"
#include "engine/log_record.hpp"
#include "engine/transaction_manager.hpp"
#include "engine/transaction_state.hpp"
#include "tests/test_support.hpp"

namespace tristore::testing_support {

struct LogOnly {
  static constexpr std::uint64_t kLogBytes = 1 << 20;

  // A fresh log of kLogBytes in a directory of its own named after `name`, its first
  // checkpoint taken; the manager hands page work to `pages`.
  LogOnly(const char* name, DurableStore& pages) : dir(kNvmBase, name) {
    NvmDeviceOptions options;
    options.path = dir.file("log.nvm");
    options.size_bytes = kLogBytes;
    options.create = true;
    device = std::make_unique<NvmDevice>(options);
    log = LogManager::create(*device, area());
    manager = std::make_unique<TransactionManager>(log.get(), &pages);
    manager->checkpoint();
  }
  std::span<std::byte> area() const { return {device->base(), kLogBytes}; }

  // A transaction as its records name it; the manager's bookkeeping is not under test.
  static TransactionState transaction(TxnId id) {
    TransactionState txn;
    txn.reset(id);
    return txn;
  }
  // Records of txn, appended as restart will find them: an 8-byte before-image of `page`,
  // and the undo of an insert of an 8-byte key into table 5.
  void before_image(TransactionState& txn, PageId page, std::uint32_t offset = 0) {
    const RedoPageBytes header{page, offset, 8};
    const std::byte bytes[8] = {};
    manager->append_chained(txn, LogRecordType::kPageBeforeImage,
                            {std::as_bytes(std::span(&header, 1)), std::span(bytes)});
  }
  void insert_undo(TransactionState& txn) {
    const UndoLogical undo{.table_id = 5,
                           .operation = UndoOperation::kInsert,
                           .reserved = 0,
                           .key_size = 8,
                           .before_size = 0,
                           .reserved2 = 0};
    const std::byte key[8] = {};
    manager->append_chained(txn, LogRecordType::kUndoLogical,
                            {std::as_bytes(std::span(&undo, 1)), std::span(key)});
  }

  TempDir dir;
  std::unique_ptr<NvmDevice> device;
  std::unique_ptr<LogManager> log;
  std::unique_ptr<TransactionManager> manager;
};

}  // namespace tristore::testing_support
