// A small tour of tristore: open a 3tier database (NVM emulated by a file in /dev/shm, SSD a
// file in /tmp), create a table, insert, read, scan, and print the counters.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>

#include "engine/database.hpp"
#include "engine/table.hpp"

int main() {
  try {
    tristore::Config config;
    config.architecture = tristore::Architecture::kThreeTier;
    config.dram_bytes = 2 * tristore::kMiB;  // small on purpose: pages spill to NVM and SSD
    config.nvm_bytes = 4 * tristore::kMiB;
    config.ssd_bytes = 256 * tristore::kMiB;
    config.nvm_path = "/dev/shm/tristore-example.nvm";
    config.ssd_path = "/tmp/tristore-example.ssd";
    // A fresh database on every run; the default, kOpenOrCreate, would reopen the last one.
    config.open_mode = tristore::OpenMode::kCreateReplacing;
    auto db = tristore::Database::open(config);

    struct Account {
      std::uint64_t balance;
      std::array<char, 24> owner;
    };
    auto accounts = db->create_table<std::uint64_t, Account>("accounts");
    for (std::uint64_t id = 0; id < 200000; ++id) {
      Account account{id * 10, {}};
      std::snprintf(account.owner.data(), account.owner.size(), "owner-%llu",
                    static_cast<unsigned long long>(id));
      accounts.insert(id, account);
    }

    Account account;
    if (accounts.get(4242, account))
      std::printf("account 4242: %s has %llu\n", account.owner.data(),
                  static_cast<unsigned long long>(account.balance));
    std::uint64_t balance = 7;
    accounts.update_part(4242, offsetof(Account, balance), sizeof(balance), &balance);

    std::printf("accounts from 199997:\n");
    accounts.scan(199997, 10, [](const std::uint64_t& id, const Account& a) {
      std::printf("  %llu %s\n", static_cast<unsigned long long>(id), a.owner.data());
      return true;
    });

    std::printf("counters:\n");
    db->counters().for_each([](const char* name, std::uint64_t value) {
      std::printf("  %-24s %llu\n", name, static_cast<unsigned long long>(value));
    });
    tristore::MemoryUsage usage = db->memory_usage();
    std::printf("DRAM %llu of %llu bytes, NVM %llu bytes, SSD %llu bytes\n",
                static_cast<unsigned long long>(usage.dram_bytes),
                static_cast<unsigned long long>(usage.dram_limit_bytes),
                static_cast<unsigned long long>(usage.nvm_bytes),
                static_cast<unsigned long long>(usage.ssd_bytes));
    db.reset();  // closing flushes every page and the catalog
    std::remove(config.nvm_path.c_str());
    std::remove(config.ssd_path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
