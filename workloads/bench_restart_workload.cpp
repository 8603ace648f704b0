#include "workloads/bench_restart_workload.hpp"

#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "workloads/bench_report.hpp"
#include "workloads/tpcc_driver.hpp"
#include "workloads/ycsb_workload.hpp"

namespace tristore {

namespace {

class YcsbRestartWorkload final : public RestartWorkload {
 public:
  explicit YcsbRestartWorkload(std::unique_ptr<YcsbSession> session)
      : session_(std::move(session)) {}
  YcsbSession& session() { return *session_; }
  void run_one(unsigned thread) override { session_->run_one(thread); }
  nlohmann::json check() override {
    if (session_->not_found() != 0)
      fail("ycsb: {} operations did not find a loaded key: the engine lost records",
           session_->not_found());
    return {{"records_not_found", 0}};
  }

 private:
  std::unique_ptr<YcsbSession> session_;
};

class TpccRestartWorkload final : public RestartWorkload {
 public:
  explicit TpccRestartWorkload(Tpcc tpcc) : tpcc_(std::move(tpcc)) {}
  Tpcc& tpcc() { return tpcc_; }
  void run_one(unsigned thread) override { tpcc_.run_one(thread); }
  nlohmann::json check() override {
    const std::vector<std::string> violations = tpcc_.check_consistency();
    if (!violations.empty())
      fail("tpcc: {} consistency conditions violated, first: {}", violations.size(),
           violations.front());
    return {{"tpcc_consistency_conditions_violated", 0}};
  }

 private:
  Tpcc tpcc_;
};

nlohmann::json load_json(const PhaseResult& load, const Database& db) {
  nlohmann::json json = phase_json(load);
  json["memory"] = memory_json(db.memory_usage());
  return json;
}

}  // namespace

std::unique_ptr<RestartWorkload> RestartWorkload::create_and_load(Database& db,
                                                                  const BenchOptions& options,
                                                                  const ProgressPrinter& progress,
                                                                  nlohmann::json& load) {
  if (options.workload == WorkloadKind::kYcsb) {
    auto workload = std::make_unique<YcsbRestartWorkload>(
        YcsbSession::create(db, options.ycsb, options.threads));
    load = load_json(workload->session().load(progress), db);
    return workload;
  }
  auto workload = std::make_unique<TpccRestartWorkload>(
      Tpcc(db, TpccOptions{options.warehouses, options.ycsb.seed}));
  progress.message(fmt::format("loading TPC-C with {} warehouses", options.warehouses));
  const Counters before = db.counters();
  const auto start = std::chrono::steady_clock::now();
  PhaseResult phase;
  phase.ops = workload->tpcc().load().rows;
  phase.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  phase.counters = db.counters() - before;
  progress.message(fmt::format("loaded {} rows in {:.2f} s", phase.ops, phase.seconds));
  load = load_json(phase, db);
  workload->tpcc().use_terminals(options.threads);
  return workload;
}

std::unique_ptr<RestartWorkload> RestartWorkload::reopen(Database& db,
                                                         const BenchOptions& options) {
  if (options.workload == WorkloadKind::kYcsb)
    return std::make_unique<YcsbRestartWorkload>(
        YcsbSession::open(db, options.ycsb, options.threads));
  auto workload = std::make_unique<TpccRestartWorkload>(
      Tpcc::reopen(db, TpccOptions{options.warehouses, options.ycsb.seed}));
  workload->tpcc().use_terminals(options.threads);
  return workload;
}

}  // namespace tristore
