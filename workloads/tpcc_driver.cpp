#include "workloads/tpcc_driver.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "common/error.hpp"
#include "engine/lock_manager.hpp"
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
      run_constants_(choose_run_constants(options_, load_constants_)) {
  terminals_.push_back({tpcc::TpccInputs(options_.warehouses, run_constants_,
                                         tpcc::TpccRandom::derive(options_.seed, kInputs)),
                        std::nullopt,
                        {}});
}

Tpcc Tpcc::reopen(Database& db, TpccOptions options) {
  Tpcc tpcc(tpcc::TpccTables::open(db), options);
  std::uint64_t next_history_sequence = 0;
  tpcc.tables_.history.scan({0}, SIZE_MAX,
                            [&](const tpcc::HistoryKey& key, const tpcc::HistoryRow&) {
                              next_history_sequence = key.sequence + 1;
                              return true;
                            });
  tpcc.start_transactions(next_history_sequence);
  return tpcc;
}

tpcc::TpccLoadTotals Tpcc::load(const tpcc::TpccLoadProgress& progress) {
  if (terminals_.front().transactions) fail("tpcc: the database is already loaded");
  tpcc::TpccPopulation population;
  population.warehouses = options_.warehouses;
  population.seed = options_.seed;
  population.constants = load_constants_;
  population.now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  loaded_ = tpcc::load_population(tables_, population, progress);
  start_transactions(loaded_.history_rows);
  return loaded_;
}

void Tpcc::start_transactions(std::uint64_t next_history_sequence) {
  next_history_sequence_ = next_history_sequence;
  ready_ = true;
  use_terminals(terminals());
}

void Tpcc::use_terminals(unsigned count) {
  if (count == 0) fail("tpcc: at least one terminal must run");
  if (std::any_of(terminals_.begin(), terminals_.end(),
                  [](const Terminal& terminal) { return terminal.started; }))
    fail("tpcc: terminals are chosen before the first transaction");
  // Terminal 0 draws the inputs a one-terminal run draws; with several, each has a home.
  terminals_.clear();
  for (unsigned t = 0; t < count; ++t) {
    const std::uint32_t home = count == 1 ? 0 : t % options_.warehouses + 1;
    terminals_.push_back(
        {tpcc::TpccInputs(options_.warehouses, run_constants_,
                          tpcc::TpccRandom::derive(options_.seed, kInputs + 16 * t), home),
         std::nullopt,
         {}});
    if (ready_) terminals_.back().transactions.emplace(tables_, next_history_sequence_ + t, count);
  }
}

tpcc::TpccTransactions& Tpcc::transactions_with_inputs() {
  if (!terminals_.front().transactions) fail("tpcc: load() must come before transactions");
  return *terminals_.front().transactions;
}

tpcc::TransactionType Tpcc::run_one(unsigned terminal) {
  const tpcc::TransactionType type = terminals_.at(terminal).inputs.next_type();
  run(type, terminal);
  return type;
}

// A conflict aborted the attempt (its Transaction handle rolled it back): the same inputs
// again, after letting the holder go on. The wait doubles with each conflict in a row (2 to
// 128 us), yielding meanwhile: a yield alone returns at once where no other thread wants the
// core, and the retry met the holder's locks again (aborts run beside the holder's changes).
template <typename Body>
void Tpcc::retrying(Terminal& terminal, Body&& body) {
  for (unsigned in_a_row = 0;; ++in_a_row) {
    try {
      body();
      return;
    } catch (const LockConflict&) {
      ++terminal.stats.lock_conflicts;
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::microseconds(2u << std::min(in_a_row, 6u));
      while (std::chrono::steady_clock::now() < until) std::this_thread::yield();
    }
  }
}

void Tpcc::run(tpcc::TransactionType type, unsigned terminal_index) {
  Terminal& terminal = terminals_.at(terminal_index);
  if (!terminal.transactions) fail("tpcc: load() must come before transactions");
  terminal.started = true;
  tpcc::TpccTransactions& transactions = *terminal.transactions;
  tpcc::TpccInputs& inputs = terminal.inputs;
  switch (type) {
    case tpcc::TransactionType::kNewOrder: {
      const tpcc::NewOrderInput input = inputs.new_order();
      retrying(terminal, [&] {
        if (!transactions.new_order(input).committed) ++terminal.stats.new_order_rollbacks;
      });
      break;
    }
    case tpcc::TransactionType::kPayment: {
      const tpcc::PaymentInput input = inputs.payment();
      retrying(terminal, [&] { transactions.payment(input); });
      break;
    }
    case tpcc::TransactionType::kOrderStatus: {
      const tpcc::OrderStatusInput input = inputs.order_status();
      retrying(terminal, [&] { transactions.order_status(input); });
      break;
    }
    case tpcc::TransactionType::kDelivery: {
      const tpcc::DeliveryInput input = inputs.delivery();
      retrying(terminal, [&] { transactions.delivery(input); });
      break;
    }
    case tpcc::TransactionType::kStockLevel: {
      const tpcc::StockLevelInput input = inputs.stock_level();
      retrying(terminal, [&] { transactions.stock_level(input); });
      break;
    }
  }
  ++terminal.stats.executed[static_cast<std::size_t>(type)];
}

TpccStats Tpcc::stats() const {
  TpccStats total;
  for (const Terminal& terminal : terminals_) total += terminal.stats;
  return total;
}

std::vector<std::string> Tpcc::check_consistency() const {
  return tpcc::check_consistency(tables_, options_.warehouses);
}

}  // namespace tristore
