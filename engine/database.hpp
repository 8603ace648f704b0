#pragma once
// The embeddable database: open from a Config, create or open tables, read the counters.
//
//   auto db = tristore::Database::open(config);
//   auto users = db->create_table<std::uint64_t, Account>("accounts");
//   users.insert(42, account);
//   Account a; users.get(42, a);
//
// Threads may share a Database and its Table handles; a Transaction belongs to one thread at a
// time. Each call is atomic: operations hold the database's latch (engine/operation_latch.hpp),
// reads that change nothing shared in shared mode, everything else exclusive.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeindex>
#include <variant>
#include <vector>

#include "common/counters.hpp"
#include "engine/config.hpp"
#include "tiers/swip.hpp"

namespace tristore {

// What a Table needs of its key and value types: fixed size, copyable with memcpy; keys
// ordered by operator<.
template <typename K>
concept TableKey = std::is_trivially_copyable_v<K> && std::totally_ordered<K>;
template <typename V>
concept TableValue = std::is_trivially_copyable_v<V>;

template <TableKey K, TableValue V>
class TableInterface;  // engine/table_interface.hpp; implemented once, engine/btree_table.hpp

template <TableKey K, TableValue V>
class Table;  // engine/table.hpp

class MainMemoryAccess;
class WearCounters;
class NvmDirectAccess;
class BufferManager;
template <typename Inner>
class OperationLog;
class TransactionManager;
class Transaction;
class CrashSimulator;
class SsdCrashSimulator;
struct RestartReport;

// The page-access policy an open database runs on; tables instantiate the B-tree for it. The
// durable architectures' access goes through their OperationLog (engine/logged_access.hpp).
using PageAccessRef =
    std::variant<MainMemoryAccess*, OperationLog<NvmDirectAccess>*, OperationLog<BufferManager>*>;

// What a new table handle needs.
struct TableBinding {
  PageAccessRef access;
  TransactionManager* transactions;
  std::uint32_t table_id;
  Swip* root;
};

struct MemoryUsage {
  std::uint64_t dram_bytes = 0;        // buffer pool (or in-memory pages) in use
  std::uint64_t dram_limit_bytes = 0;  // the configured budget
  std::uint64_t page_table_bytes = 0;  // reported apart from the budget
  std::uint64_t nvm_bytes = 0;         // NVM slots in use
  std::uint64_t ssd_bytes = 0;         // SSD pages in use
};

class Database {
 public:
  // Throws Error (one line) for a configuration that cannot work or files that do not match.
  static std::unique_ptr<Database> open(const Config& config);
  virtual ~Database() = default;

  const Config& config() const { return config_; }
  // Both may be read while other threads run operations.
  Counters counters() const;
  MemoryUsage memory_usage() const;
  // Writes per NVM cache line (paper Figure 16); nullptr without NVM or without
  // Config::nvm_wear_counting.
  virtual const WearCounters* nvm_wear() const { return nullptr; }
  // Whether the NVM file is real persistent memory (libpmem's pmem_is_pmem on a DAX mapping):
  // persisted lines then survive a power loss; on tmpfs only a process crash. False without NVM.
  virtual bool nvm_is_pmem() const { return false; }
  // How a persisted NVM line is made durable: "pmem", "tmpfs", "msync" or "weak"
  // (emulation/nvm_persistence.hpp); "none" without an NVM file.
  virtual std::string_view nvm_persistence() const { return "none"; }
  // The NVM file's crash simulator (crash tests); nullptr without Config::nvm_crash_simulation.
  virtual CrashSimulator* nvm_crash_simulator() { return nullptr; }
  // The SSD file's crash simulator; nullptr without an SSD or Config::ssd_crash_simulation.
  // With both simulators on, the SSD one freezes when the NVM one's armed fence fires.
  virtual SsdCrashSimulator* ssd_crash_simulator() { return nullptr; }

  template <TableKey K, TableValue V>
  // Error if it exists, or if the catalog is full: it lives in a small metadata area of the
  // NVM file (or the SSD superblock) and holds 15 tables (Catalog::capacity).
  Table<K, V> create_table(std::string_view name);
  // Error if missing or of other types. After a crash, opening a table first undoes what
  // unfinished transactions left in it.
  template <TableKey K, TableValue V>
  Table<K, V> open_table(std::string_view name);
  // Both defined in engine/table.hpp. Tables must not outlive their Database.

  // A transaction (engine/transaction.hpp); all durable architectures log it, main-memory
  // keeps it in DRAM (atomic, not durable).
  Transaction begin();
  // Makes every change durable in NVM or SSD and lets the log drop older records; also runs
  // on its own when the log fills. No-op for main-memory.
  void checkpoint();
  // What restart did when this database was opened after a crash (performed = false: new).
  const RestartReport& restart_report() const;
  // Experiments: destroying the database then writes nothing more (no checkpoint), as if the
  // process had crashed: DRAM pages are lost, NVM and SSD hold what had reached them.
  void simulate_crash_on_close() { crash_on_close_ = true; }

 protected:
  explicit Database(const Config& config) : config_(config) {}
  // A new (empty) or existing table; Error on a duplicate or missing name, or sizes other
  // than the table's. The root swip stays at its address while the database is open.
  virtual TableBinding bind_table(std::string_view name, std::size_t key_size,
                                  std::size_t value_size, bool create) = 0;
  // The table's one object (engine/table.hpp), made at its first handle: Error if it is open
  // with other key and value types of the same sizes. Under the exclusive latch.
  template <TableKey K, TableValue V>
  std::shared_ptr<TableInterface<K, V>> table_object(const TableBinding& binding,
                                                     std::string_view name);
  virtual TransactionManager& transactions() = 0;
  virtual const TransactionManager& transactions() const = 0;
  // What counters() and memory_usage() return, read with no operation running.
  virtual Counters collect_counters() const = 0;
  virtual MemoryUsage collect_memory_usage() const = 0;
  Config config_;
  bool crash_on_close_ = false;
  // One object per table (by table id), shared by every handle of it: the root page it last
  // logged, the rows its unfinished transactions removed, and the undo steps of open
  // transactions, which point at it. Kept while the database is open, so a transaction may
  // outlive the handles it changed the table through. (Separate objects per handle missed
  // each other's root changes and removes.) The subclass lets go of them before its storage.
  struct OpenTable {
    std::type_index type;
    std::shared_ptr<void> object;
  };
  std::vector<std::optional<OpenTable>> open_tables_;
};

}  // namespace tristore
