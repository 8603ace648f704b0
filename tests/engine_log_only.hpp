#pragma once
// A transaction manager over a log of its own on an emulated NVM device, with no database
// around it: for tests of what the log and the transaction manager do by themselves.
#include <cstdint>
#include <memory>
#include <span>

#include "emulation/nvm_device.hpp"
#include "engine/durable_store.hpp"
#include "engine/log_manager.hpp"
#include "engine/transaction_manager.hpp"
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

  TempDir dir;
  std::unique_ptr<NvmDevice> device;
  std::unique_ptr<LogManager> log;
  std::unique_ptr<TransactionManager> manager;
};

}  // namespace tristore::testing_support
