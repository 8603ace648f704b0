#include "workloads/bench_tpcc.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>

#include "common/error.hpp"
#include "workloads/bench_report.hpp"
#include "workloads/size_parser.hpp"
#include "workloads/tpcc_driver.hpp"

namespace tristore {

namespace {

constexpr std::array<std::string_view, tpcc::kTransactionTypes> kTransactionNames{
    "new_order", "payment", "order_status", "delivery", "stock_level"};

}  // namespace

nlohmann::json run_tpcc_bench(Database& db, const BenchOptions& options,
                              const ProgressPrinter& progress,
                              const std::function<void()>& before_measured) {
  // 1. Load.
  Tpcc tpcc(db, TpccOptions{options.warehouses, options.ycsb.seed});
  progress.message(fmt::format("loading TPC-C with {} warehouses", options.warehouses));
  const Counters before_load = db.counters();
  const auto load_start = std::chrono::steady_clock::now();
  const tpcc::TpccLoadTotals totals = tpcc.load([&progress](const tpcc::TpccLoadStep& step) {
    progress.message(fmt::format("  loaded {:<10} {:>10} rows ({}/{})", step.table, step.rows,
                                 step.tables_done, step.tables_total));
  });
  PhaseResult load;
  load.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  load.ops = totals.rows;
  load.counters = db.counters() - before_load;
  progress.message(fmt::format("loaded {} rows ({}) in {:.2f} s", totals.rows,
                               human_size(totals.bytes), load.seconds));

  const MemoryUsage memory_after_load_usage = db.memory_usage();
  const nlohmann::json memory_after_load = memory_json(memory_after_load_usage);

  // 2. Warm up, then measure, counting transactions by type over the measured phase only.
  tpcc.use_terminals(options.threads);
  const auto transaction = [&tpcc](unsigned thread) { tpcc.run_one(thread); };
  const PhaseResult warmup =
      run_phase(db, "warmup", {options.warmup_seconds, 0}, progress, options.threads, transaction);
  const TpccStats before_run = tpcc.stats();
  if (before_measured) before_measured();
  const PhaseResult measured =
      run_phase(db, "run", {options.seconds, options.ops}, progress, options.threads, transaction);
  const TpccStats after_run = tpcc.stats();

  // 3. A result on a corrupted database means nothing.
  const std::vector<std::string> violations = tpcc.check_consistency();
  if (!violations.empty())
    fail("tpcc: {} consistency conditions violated after the run, first: {}", violations.size(),
         violations.front());

  nlohmann::json result;
  result["load"] = phase_json(load);
  result["load"]["memory"] = memory_after_load;
  result["warmup"] = phase_json(warmup);
  add_measured_json(result, measured);
  result["data_bytes"] = tree_bytes(memory_after_load_usage);
  result["loaded_row_bytes"] = totals.bytes;
  nlohmann::json by_type = nlohmann::json::object();
  for (std::size_t type = 0; type < tpcc::kTransactionTypes; ++type)
    by_type[std::string(kTransactionNames[type])] =
        after_run.executed[type] - before_run.executed[type];
  by_type["new_order_rollbacks"] = after_run.new_order_rollbacks - before_run.new_order_rollbacks;
  by_type["lock_conflicts"] = after_run.lock_conflicts - before_run.lock_conflicts;
  result["operations"] = by_type;
  return result;
}

}  // namespace tristore
