#pragma once
// The workload of a --restart run, one operation at a time on each of --threads threads:
// created and loaded by the process that is killed, reopened over the recovered database by
// the one that restarts, so the same workload runs before the crash and after it.
#include <nlohmann/json.hpp>

#include <memory>

#include "engine/database.hpp"
#include "workloads/bench_options.hpp"
#include "workloads/bench_phase.hpp"

namespace tristore {

class RestartWorkload {
 public:
  // New tables, loaded; `load` gets the load phase's JSON (seconds, ops, counters).
  static std::unique_ptr<RestartWorkload> create_and_load(Database& db, const BenchOptions& options,
                                                          const ProgressPrinter& progress,
                                                          nlohmann::json& load);
  // The tables of a recovered database; opening them runs the losers' undo.
  static std::unique_ptr<RestartWorkload> reopen(Database& db, const BenchOptions& options);

  virtual ~RestartWorkload() = default;
  // One operation on thread `thread` (< options.threads), one thread per index at a time.
  virtual void run_one(unsigned thread) = 0;
  // Throws Error if the data is wrong: a YCSB record not found, a TPC-C consistency condition
  // violated. Returns what was checked, for the JSON. Not while run_one runs.
  virtual nlohmann::json check() = 0;
};

}  // namespace tristore
