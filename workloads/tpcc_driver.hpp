#pragma once
// TPC-C on a tristore Database: the entry point for tristore-bench.
//
//   tristore::Tpcc tpcc(*db, {.warehouses = 4, .seed = 42});
//   tpcc.load([](const tristore::tpcc::TpccLoadStep& step) { ... });  // once, into a new database
//   while (running) tpcc.run_one();                                    // one transaction of the
//   mix tpcc.transactions();                                               // how many so far
//   tpcc.check_consistency();                                          // empty when consistent
//
// The mix is 45/43/4/4/4 (New-Order, Payment, Order-Status, Delivery, Stock-Level), no think
// times. Rolled-back New-Orders (1 %) count as executed transactions. A transaction that meets
// a lock conflict is retried with the same inputs (counted in TpccStats::lock_conflicts).
// One terminal by default, its home warehouse uniform per transaction; use_terminals(n) makes
// n terminals for n threads, terminal t at home in warehouse t % warehouses + 1 (the spec's
// fixed home), each with its own inputs: run_one(t) on one thread per terminal.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/database.hpp"
#include "workloads/tpcc_inputs.hpp"
#include "workloads/tpcc_loader.hpp"
#include "workloads/tpcc_tables.hpp"
#include "workloads/tpcc_transactions.hpp"

namespace tristore {

struct TpccOptions {
  std::uint32_t warehouses = 1;  // the scale factor
  std::uint64_t seed = 42;       // population, NURand constants and inputs all follow from it
};

struct TpccStats {
  std::array<std::uint64_t, tpcc::kTransactionTypes> executed{};  // by TransactionType
  std::uint64_t new_order_rollbacks = 0;                          // included in executed
  std::uint64_t lock_conflicts = 0;  // attempts aborted by a conflict and retried

  TpccStats& operator+=(const TpccStats& other) {
    for (std::size_t i = 0; i < executed.size(); ++i) executed[i] += other.executed[i];
    new_order_rollbacks += other.new_order_rollbacks;
    lock_conflicts += other.lock_conflicts;
    return *this;
  }

  std::uint64_t total() const {
    std::uint64_t sum = 0;
    for (std::uint64_t n : executed) sum += n;
    return sum;
  }
  std::uint64_t of(tpcc::TransactionType type) const {
    return executed[static_cast<std::size_t>(type)];
  }
};

class Tpcc {
 public:
  // Creates the TPC-C tables in `db` (Error if they exist).
  Tpcc(Database& db, TpccOptions options);
  // Over tables the caller created.
  Tpcc(tpcc::TpccTables tables, TpccOptions options);

  // Over the loaded tables of a reopened database (after a crash, opening them undoes the
  // unfinished transactions): ready to run, history rows numbered after the last one present.
  static Tpcc reopen(Database& db, TpccOptions options);

  // Populates the empty tables (clause 4.3); progress is called after each table.
  tpcc::TpccLoadTotals load(const tpcc::TpccLoadProgress& progress = {});

  // After load() or reopen, before any transaction: `count` terminals (Error for 0).
  void use_terminals(unsigned count);
  unsigned terminals() const { return static_cast<unsigned>(terminals_.size()); }

  // Runs one transaction drawn from the terminal's mix; returns its type. Error before load().
  // Terminals may run on different threads at once; one terminal on one thread at a time.
  tpcc::TransactionType run_one(unsigned terminal = 0);
  // Runs one transaction of the given type with random inputs.
  void run(tpcc::TransactionType type, unsigned terminal = 0);

  std::uint64_t transactions() const { return stats().total(); }
  // Every terminal's, summed (not while they run).
  TpccStats stats() const;
  // Bytes of keys and rows loaded (the data set size).
  std::uint64_t data_bytes() const { return loaded_.bytes; }
  const TpccOptions& options() const { return options_; }
  const tpcc::NuRandConstants& load_constants() const { return load_constants_; }
  const tpcc::NuRandConstants& run_constants() const { return run_constants_; }

  // Violated consistency conditions (clause 3.3.2), one line each; empty when consistent.
  std::vector<std::string> check_consistency() const;

  // For tests: the transactions with chosen inputs, and the tables.
  tpcc::TpccTransactions& transactions_with_inputs();
  const tpcc::TpccTables& tables() const { return tables_; }

 private:
  TpccOptions options_;
  tpcc::TpccTables tables_;
  tpcc::NuRandConstants load_constants_, run_constants_;
  // One driver of transactions, on cache lines of its own.
  struct alignas(64) Terminal {
    tpcc::TpccInputs inputs;
    std::optional<tpcc::TpccTransactions> transactions;  // once loaded
    TpccStats stats;
    bool started = false;  // a transaction ran here (each terminal's thread writes its own)
  };
  void start_transactions(std::uint64_t next_history_sequence);
  template <typename Body>
  void retrying(Terminal& terminal, Body&& body);

  std::vector<Terminal> terminals_;  // at least one
  std::uint64_t next_history_sequence_ = 0;
  bool ready_ = false;  // loaded or reopened
  tpcc::TpccLoadTotals loaded_;
};

}  // namespace tristore
