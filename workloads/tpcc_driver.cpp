#include "workloads/tpcc_driver.hpp"

#include <chrono>
#include <cstdint>

#include "common/error.hpp"
#include "workloads/tpcc_consistency.hpp"

namespace tristore {
namespace {

enum SeedStream : std::uint64_t { kLoadConstants = 100, kRunConstants, kInputs };

tpcc::TpccRandom random_for(const TpccOptions& options, SeedStream stream) {
  return tpcc::TpccRandom(tpcc::TpccRandom::derive(options.seed, stream));
}

tpcc::NuRandConstants choose_load_constants(const TpccOptions& options) {
  tpcc::TpccRandom random = random_for(options, kLoadConstants);
  return tpcc::NuRandConstants::for_load(random);
}

tpcc::NuRandConstants choose_run_constants(const TpccOptions& options,
                                           const tpcc::NuRandConstants& load) {
  tpcc::TpccRandom random = random_for(options, kRunConstants);
  return tpcc::NuRandConstants::for_run(load, random);
}

const TpccOptions& validated(const TpccOptions& options) {
  if (options.warehouses == 0) fail("tpcc: --warehouses must be at least 1");
  if (options.warehouses > 100000) fail("tpcc: {} warehouses is too many", options.warehouses);
  return options;
}

// Validates before creating anything.
tpcc::TpccTables create_tables(Database& db, const TpccOptions& options) {
  validated(options);
  return tpcc::TpccTables::create(db);
}

}  // namespace

Tpcc::Tpcc(Database& db, TpccOptions options) : Tpcc(create_tables(db, options), options) {}

Tpcc::Tpcc(tpcc::TpccTables tables, TpccOptions options)
    : options_(validated(options)),
      tables_(std::move(tables)),
      load_constants_(choose_load_constants(options_)),
      run_constants_(choose_run_constants(options_, load_constants_)),
      inputs_(options_.warehouses, run_constants_,
              tpcc::TpccRandom::derive(options_.seed, kInputs)) {}

Tpcc Tpcc::reopen(Database& db, TpccOptions options) {
  Tpcc tpcc(tpcc::TpccTables::open(db), options);
  std::uint64_t next_history_sequence = 0;
  tpcc.tables_.history.scan({0}, SIZE_MAX,
                            [&](const tpcc::HistoryKey& key, const tpcc::HistoryRow&) {
                              next_history_sequence = key.sequence + 1;
                              return true;
                            });
  tpcc.transactions_.emplace(tpcc.tables_, next_history_sequence);
  return tpcc;
}

tpcc::TpccLoadTotals Tpcc::load(const tpcc::TpccLoadProgress& progress) {
  if (transactions_) fail("tpcc: the database is already loaded");
  tpcc::TpccPopulation population;
  population.warehouses = options_.warehouses;
  population.seed = options_.seed;
  population.constants = load_constants_;
  population.now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  loaded_ = tpcc::load_population(tables_, population, progress);
  transactions_.emplace(tables_, loaded_.history_rows);
  return loaded_;
}

tpcc::TpccTransactions& Tpcc::transactions_with_inputs() {
  if (!transactions_) fail("tpcc: load() must come before transactions");
  return *transactions_;
}

tpcc::TransactionType Tpcc::run_one() {
  const tpcc::TransactionType type = inputs_.next_type();
  run(type);
  return type;
}

void Tpcc::run(tpcc::TransactionType type) {
  tpcc::TpccTransactions& transactions = transactions_with_inputs();
  switch (type) {
    case tpcc::TransactionType::kNewOrder:
      if (!transactions.new_order(inputs_.new_order()).committed) ++stats_.new_order_rollbacks;
      break;
    case tpcc::TransactionType::kPayment:
      transactions.payment(inputs_.payment());
      break;
    case tpcc::TransactionType::kOrderStatus:
      transactions.order_status(inputs_.order_status());
      break;
    case tpcc::TransactionType::kDelivery:
      transactions.delivery(inputs_.delivery());
      break;
    case tpcc::TransactionType::kStockLevel:
      transactions.stock_level(inputs_.stock_level());
      break;
  }
  ++stats_.executed[static_cast<std::size_t>(type)];
}

std::vector<std::string> Tpcc::check_consistency() const {
  return tpcc::check_consistency(tables_, options_.warehouses);
}

}  // namespace tristore
