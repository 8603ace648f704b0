#pragma once
// TPC-C on a tristore Database: the entry point for tristore-bench.
//
//   tristore::Tpcc tpcc(*db, {.warehouses = 4, .seed = 42});
//   tpcc.load([](const tristore::tpcc::TpccLoadStep& step) { ... });  // once, into a new database
//   while (running) tpcc.run_one();                                    // one transaction of the
//   mix tpcc.transactions();                                               // how many so far
//   tpcc.check_consistency();                                          // empty when consistent
//
// One Tpcc drives the database from one thread. The mix is 45/43/4/4/4 (New-Order, Payment,
// Order-Status, Delivery, Stock-Level), no think times, the home warehouse uniform per
// transaction. Rolled-back New-Orders (1 %) count as executed transactions.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
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

  // Runs one transaction drawn from the mix; returns its type. Error before load().
  tpcc::TransactionType run_one();
  // Runs one transaction of the given type with random inputs.
  void run(tpcc::TransactionType type);

  std::uint64_t transactions() const { return stats_.total(); }
  const TpccStats& stats() const { return stats_; }
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
  tpcc::TpccInputs inputs_;
  std::optional<tpcc::TpccTransactions> transactions_;  // once loaded
  tpcc::TpccLoadTotals loaded_;
  TpccStats stats_;
};

}  // namespace tristore
