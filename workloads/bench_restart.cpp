#include "workloads/bench_restart.hpp"

#include <chrono>
#include <cstdint>
#include <memory>

#include "common/error.hpp"
#include "engine/database.hpp"
#include "engine/restart_report.hpp"
#include "engine/table.hpp"
#include "workloads/key_chooser.hpp"
#include "workloads/random.hpp"
#include "workloads/ycsb_record.hpp"

namespace tristore {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Lookups of one random field (ycsb-ro's operation) in intervals of `interval` seconds, for
// at most options.seconds, until an interval reaches target_ops_s.
template <typename Key, typename Value>
nlohmann::json lookups_until(Database& db, const BenchOptions& options, double target_ops_s,
                             Clock::time_point reopened) {
  constexpr double kInterval = 0.1;
  auto table = db.open_table<Key, Value>("usertable");  // runs the losers' undo first
  const double undone = seconds_between(reopened, Clock::now());
  const KeyChooser keys(options.ycsb.distribution, options.ycsb.records, options.ycsb.zipf_theta,
                        options.ycsb.seed);
  Random random(options.ycsb.seed ^ 0x7e57a27ULL);
  nlohmann::json series = nlohmann::json::array();
  double reached = -1;
  const auto start = Clock::now();
  while (seconds_between(start, Clock::now()) < options.seconds && reached < 0) {
    const auto interval_start = Clock::now();
    std::uint64_t ops = 0;
    while (seconds_between(interval_start, Clock::now()) < kInterval) {
      for (int batch = 0; batch < 64; ++batch, ++ops) {
        const std::uint64_t key = keys.next(random);
        if constexpr (sizeof(Value) == sizeof(YcsbRow)) {
          char field[kYcsbFieldSize];
          const std::size_t which = random.next_below(kYcsbFieldCount);
          if (!table.get_part(static_cast<Key>(key), which * kYcsbFieldSize, kYcsbFieldSize, field))
            fail("restart: record {} is missing after recovery", key);
        } else {
          Value value;
          if (!table.get(static_cast<Key>(key), value))
            fail("restart: record {} is missing after recovery", key);
        }
      }
    }
    const auto now = Clock::now();
    const double ops_s = static_cast<double>(ops) / seconds_between(interval_start, now);
    series.push_back({{"seconds_since_reopen", seconds_between(reopened, now)}, {"ops_s", ops_s}});
    if (ops_s >= target_ops_s) reached = seconds_between(reopened, now);
  }
  return {{"table_open_seconds", undone},
          {"throughput_series", series},
          {"seconds_to_pre_restart_throughput", reached >= 0 ? nlohmann::json(reached) : nullptr}};
}

}  // namespace

nlohmann::json measure_restart(const BenchOptions& options, double pre_restart_ops_s) {
  if (options.workload != WorkloadKind::kYcsb)
    fail("--restart measures YCSB runs only (the lookups after the restart are ycsb-ro's)");
  // 1. Reopen the files the crashed run left; restart runs inside open.
  Config config = options.config;
  config.create = false;
  const auto reopened = Clock::now();
  std::unique_ptr<Database> db = Database::open(config);
  const double open_seconds = seconds_between(reopened, Clock::now());
  const RestartReport& report = db->restart_report();
  nlohmann::json result{{"open_seconds", open_seconds},
                        {"page_table_rebuild_seconds", report.page_table_rebuild_seconds},
                        {"log_open_seconds", report.log_open_seconds},
                        {"analysis_seconds", report.analysis_seconds},
                        {"redo_seconds", report.redo_seconds},
                        {"log_bytes_scanned", report.log_bytes_scanned},
                        {"redo_operations", report.redo_operations},
                        {"losers", report.losers},
                        {"pre_restart_throughput_ops_s", pre_restart_ops_s}};
  // 2. Back to work: lookups until the throughput before the crash is reached again.
  nlohmann::json after =
      options.ycsb.micro
          ? lookups_until<YcsbMicroKey, YcsbMicroValue>(*db, options, pre_restart_ops_s, reopened)
          : lookups_until<YcsbKey, YcsbRow>(*db, options, pre_restart_ops_s, reopened);
  result.update(after);
  result["undo_seconds"] = db->restart_report().undo_seconds;
  return result;
}

}  // namespace tristore
