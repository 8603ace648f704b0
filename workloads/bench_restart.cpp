#include "workloads/bench_restart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/error.hpp"
#include "engine/database.hpp"
#include "engine/restart_report.hpp"
#include "workloads/bench_phase.hpp"
#include "workloads/bench_report.hpp"
#include "workloads/bench_restart_child.hpp"
#include "workloads/bench_restart_sampler.hpp"
#include "workloads/bench_restart_workload.hpp"

namespace tristore {

namespace {

double seconds_between(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// One sampling interval, from either process; counters absolute at its end.
struct Interval {
  SteadyClock::time_point end;
  double seconds = 0;
  std::uint64_t ops = 0;
  std::vector<std::uint64_t> ops_by_thread;
  nlohmann::json counters;

  double ops_s() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0.0; }
};

Interval interval_from_message(const nlohmann::json& message) {
  return {from_nanoseconds(message.at("t_ns").get<std::int64_t>()),
          message.at("seconds").get<double>(), message.at("ops").get<std::uint64_t>(),
          message.at("ops_by_thread").get<std::vector<std::uint64_t>>(), message.at("counters")};
}

Interval interval_from_sample(const ThroughputSample& sample) {
  return {sample.end, sample.seconds, sample.ops, sample.ops_by_thread,
          counters_json(sample.counters)};
}

// The counters that show where pages come from after the restart (NVM or SSD).
constexpr std::array<const char*, 4> kSeriesCounters{"nvm_lines_read", "nvm_lines_written",
                                                     "ssd_pages_read", "ssd_pages_written"};

std::uint64_t counter_delta(const nlohmann::json& from, const nlohmann::json& to,
                            const char* name) {
  return to.at(name).get<std::uint64_t>() - from.at(name).get<std::uint64_t>();
}

nlohmann::json counters_delta(const nlohmann::json& from, const nlohmann::json& to) {
  nlohmann::json delta = nlohmann::json::object();
  for (const auto& [name, value] : to.items())
    delta[name] = value.get<std::uint64_t>() - from.at(name).get<std::uint64_t>();
  return delta;
}

// The series on the figure's time axis: t_s is the interval's end, 0 = the kill.
nlohmann::json series_json(const std::vector<Interval>& intervals,
                           const nlohmann::json& counters_at_start, SteadyClock::time_point crash) {
  nlohmann::json series = nlohmann::json::array();
  const nlohmann::json* previous = &counters_at_start;
  for (const Interval& interval : intervals) {
    nlohmann::json point = {{"t_s", seconds_between(crash, interval.end)},
                            {"seconds", interval.seconds},
                            {"ops", interval.ops},
                            {"ops_s", interval.ops_s()}};
    for (const char* name : kSeriesCounters)
      point[name] = counter_delta(*previous, interval.counters, name);
    series.push_back(std::move(point));
    previous = &interval.counters;
  }
  return series;
}

struct Totals {
  double seconds = 0;
  std::uint64_t ops = 0;
  std::vector<std::uint64_t> ops_by_thread;
  double ops_s() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0.0; }
  nlohmann::json ops_s_by_thread() const {
    nlohmann::json rates = nlohmann::json::array();
    for (const std::uint64_t thread_ops : ops_by_thread)
      rates.push_back(seconds > 0 ? static_cast<double>(thread_ops) / seconds : 0.0);
    return rates;
  }
};

Totals totals_of(const std::vector<Interval>& intervals, std::size_t first = 0) {
  Totals totals;
  for (std::size_t i = first; i < intervals.size(); ++i) {
    totals.seconds += intervals[i].seconds;
    totals.ops += intervals[i].ops;
    totals.ops_by_thread.resize(intervals[i].ops_by_thread.size());
    for (std::size_t thread = 0; thread < intervals[i].ops_by_thread.size(); ++thread)
      totals.ops_by_thread[thread] += intervals[i].ops_by_thread[thread];
  }
  return totals;
}

// Spread of the interval rates around the mean: the noise the recovered threshold must clear.
double coefficient_of_variation(const std::vector<Interval>& intervals, double mean) {
  if (intervals.size() < 2 || mean <= 0) return 0;
  double sum = 0;
  for (const Interval& interval : intervals) sum += std::pow(interval.ops_s() - mean, 2);
  return std::sqrt(sum / static_cast<double>(intervals.size() - 1)) / mean;
}

// Seconds from `from` to the end of the first interval at or above `rate`; null if none.
nlohmann::json seconds_until_rate(const std::vector<Interval>& intervals, double rate,
                                  SteadyClock::time_point from) {
  for (const Interval& interval : intervals)
    if (interval.ops_s() >= rate) return seconds_between(from, interval.end);
  return nullptr;
}

// The same over the mean of the intervals that ended within `window` of each interval's end
// (from the restart on): the first time a stretch of `window` reaches `rate`.
nlohmann::json seconds_until_mean_rate(const std::vector<Interval>& intervals, double rate,
                                       double window, SteadyClock::time_point from) {
  std::size_t first = 0;
  Totals totals;
  for (const Interval& interval : intervals) {
    totals.seconds += interval.seconds;
    totals.ops += interval.ops;
    while (seconds_between(intervals[first].end, interval.end) >= window) {
      totals.seconds -= intervals[first].seconds;
      totals.ops -= intervals[first].ops;
      ++first;
    }
    if (totals.ops_s() >= rate) return seconds_between(from, interval.end);
  }
  return nullptr;
}

// The warm-up told by counters, which a busy machine does not disturb: seconds from `from`
// to the end of the first interval whose NVM lines and SSD pages read per operation are both
// within kWarmReadsTolerance of the pre-crash run's; null if none.
nlohmann::json seconds_until_warm(const std::vector<Interval>& before,
                                  const nlohmann::json& before_start,
                                  const std::vector<Interval>& after,
                                  const nlohmann::json& after_start, SteadyClock::time_point from) {
  constexpr std::array<const char*, 2> kReads{"nvm_lines_read", "ssd_pages_read"};
  constexpr double kNoReads = 1e-3;  // per operation: what counts as none when none were read
  const double pre_ops = static_cast<double>(totals_of(before).ops);
  std::array<double, kReads.size()> limit{};
  for (std::size_t i = 0; i < kReads.size(); ++i)
    limit[i] = static_cast<double>(counter_delta(before_start, before.back().counters, kReads[i])) /
                   pre_ops * (1 + kWarmReadsTolerance) +
               kNoReads;
  const nlohmann::json* previous = &after_start;
  for (const Interval& interval : after) {
    bool warm = interval.ops > 0;
    for (std::size_t i = 0; i < kReads.size() && warm; ++i)
      warm = static_cast<double>(counter_delta(*previous, interval.counters, kReads[i])) /
                 static_cast<double>(interval.ops) <=
             limit[i];
    if (warm) return seconds_between(from, interval.end);
    previous = &interval.counters;
  }
  return nullptr;
}

// One progress line per second of samples, on the figure's time axis.
class SecondsPrinter {
 public:
  SecondsPrinter(const ProgressPrinter& progress, std::string_view phase)
      : progress_(progress), phase_(phase) {}
  void add(const Interval& interval, SteadyClock::time_point origin) {
    seconds_ += interval.seconds;
    ops_ += interval.ops;
    if (seconds_ < 1) return;
    progress_.message(fmt::format("{:>8} {:+7.1f}s {:>12.0f} ops/s", phase_,
                                  seconds_between(origin, interval.end),
                                  static_cast<double>(ops_) / seconds_));
    seconds_ = 0;
    ops_ = 0;
  }

 private:
  const ProgressPrinter& progress_;
  std::string_view phase_;
  double seconds_ = 0;
  std::uint64_t ops_ = 0;
};

// The phases of recovery (Database::open, then opening the tables); undo is split between
// the two (losers found in open, their undo applied as each table opens). other_seconds is
// the rest: files opened and mapped, the latency injector calibrated, catalog, DRAM pool,
// table handles.
nlohmann::json phases_json(const RestartReport& report, double recovery_seconds) {
  const double named = report.page_table_rebuild_seconds + report.log_open_seconds +
                       report.analysis_seconds + report.redo_seconds + report.undo_seconds;
  return {{"page_table_rebuild_seconds", report.page_table_rebuild_seconds},
          {"log_open_seconds", report.log_open_seconds},
          {"analysis_seconds", report.analysis_seconds},
          {"redo_seconds", report.redo_seconds},
          {"undo_seconds", report.undo_seconds},
          {"other_seconds", std::max(0.0, recovery_seconds - named)}};
}

nlohmann::json recovery_work_json(const RestartReport& report) {
  return {{"log_bytes_scanned", report.log_bytes_scanned},
          {"redo_operations", report.redo_operations},
          {"redo_entries_applied", report.redo_entries_applied},
          {"before_images_restored", report.before_images_restored},
          {"pages_given_back", report.pages_given_back},
          {"torn_pages_mended", report.torn_pages_mended},
          {"losers", report.losers},
          {"undo_records_pending", report.undo_records_pending}};
}

// The worker's run up to the kill.
struct CrashedRun {
  nlohmann::json ready;  // the worker's report after its warm-up
  std::vector<Interval> before;
  SteadyClock::time_point crash;
  pid_t worker_pid = 0;
};

// The restarted database's recovery and run.
struct RestartedRun {
  SteadyClock::time_point reopen_start, reopened, tables_open;
  RestartReport report;
  nlohmann::json counters_after_open, counters_after, check;
  std::vector<Interval> after;
};

// 1. A worker process loads, warms up and runs the workload for options.seconds of samples.
// 2. SIGKILL in the middle of an operation. Samples already in the pipe were measured before
//    it and count.
CrashedRun run_until_crash(const BenchOptions& options, SteadyClock::duration interval,
                           const ProgressPrinter& progress) {
  CrashedRun run;
  CrashingChild worker(options, interval, progress);
  run.ready = worker.next_message();
  const SteadyClock::time_point measured_start =
      from_nanoseconds(run.ready.at("t_ns").get<std::int64_t>());
  SecondsPrinter printer(progress, "run");
  for (double covered = 0; covered < options.seconds;) {
    run.before.push_back(interval_from_message(worker.next_message()));
    covered += run.before.back().seconds;
    printer.add(run.before.back(), measured_start);
  }
  run.worker_pid = worker.pid();
  run.crash = worker.kill();
  for (const nlohmann::json& message : worker.drain())
    run.before.push_back(interval_from_message(message));
  progress.message(fmt::format("crash: worker process {} killed with SIGKILL", run.worker_pid));
  return run;
}

// 1. Reopen (page table, log, analysis, redo), then the tables (the losers' undo).
// 2. The same workload again, sampled the same way, then the recovered data checked.
RestartedRun restart_and_run(const BenchOptions& options, SteadyClock::duration interval,
                             const ProgressPrinter& progress, SteadyClock::time_point crash) {
  RestartedRun run;
  Config config = options.config;
  config.open_mode = OpenMode::kOpenExisting;
  run.reopen_start = SteadyClock::now();
  std::unique_ptr<Database> db = Database::open(config);
  run.reopened = SteadyClock::now();
  std::unique_ptr<RestartWorkload> workload = RestartWorkload::reopen(*db, options);
  run.tables_open = SteadyClock::now();
  run.report = db->restart_report();
  if (!run.report.performed) fail("--restart: reopening did not run restart");
  progress.message(fmt::format("restart: reopened in {:.1f} ms, tables open after {:.1f} ms",
                               seconds_between(run.reopen_start, run.reopened) * 1e3,
                               seconds_between(run.reopen_start, run.tables_open) * 1e3));

  const double seconds = options.restart_seconds > 0 ? options.restart_seconds : options.seconds;
  run.counters_after_open = counters_json(db->counters());
  SecondsPrinter printer(progress, "restart");
  double covered = 0;
  run_sampled(
      *db, interval, options.threads, [&workload](unsigned thread) { workload->run_one(thread); },
      [&](const ThroughputSample& sample) {
        run.after.push_back(interval_from_sample(sample));
        printer.add(run.after.back(), crash);
        covered += sample.seconds;
        return covered < seconds;
      });
  run.check = workload->check();
  run.counters_after = counters_json(db->counters());
  return run;
}

// The pre-crash run is the measured phase (throughput_ops_s, counters); "restart" has the rest.
nlohmann::json describe(const BenchOptions& options, const CrashedRun& crashed,
                        const RestartedRun& restarted) {
  const std::vector<Interval>& before = crashed.before;
  const std::vector<Interval>& after = restarted.after;
  const Totals pre = totals_of(before);
  const double pre_rate = pre.ops_s();
  const double threshold = kRecoveredFraction * pre_rate;
  const auto pre_at_threshold =
      std::count_if(before.begin(), before.end(),
                    [threshold](const Interval& i) { return i.ops_s() >= threshold; });
  const double recovery_seconds = seconds_between(restarted.reopen_start, restarted.tables_open);

  nlohmann::json result;
  result["load"] = crashed.ready.at("load");
  result["warmup"] = crashed.ready.at("warmup");
  result["ops"] = pre.ops;
  result["seconds"] = pre.seconds;
  result["throughput_ops_s"] = pre_rate;
  result["ops_by_thread"] = pre.ops_by_thread;
  result["throughput_by_thread_ops_s"] = pre.ops_s_by_thread();
  result["counters"] = counters_delta(crashed.ready.at("counters"), before.back().counters);
  result["data_bytes"] = crashed.ready.at("data_bytes");
  result["memory"] = crashed.ready.at("memory");
  result["nvm_is_pmem"] = crashed.ready.at("nvm_is_pmem");
  result["nvm_persistence"] = crashed.ready.at("nvm_persistence");
  result["restart"] = {
      {"crash",
       {{"method", "sigkill"},
        {"description",
         "the worker process running the workload was killed with SIGKILL (kill -9) in the "
         "middle of an operation: no flush, no close; the NVM and SSD files keep what had "
         "reached them (a process crash: on tmpfs NVM this is not a power failure)"},
        {"worker_pid", crashed.worker_pid},
        {"power_failure_simulated", false}}},
      {"sample_seconds", options.sample_seconds},
      {"threshold_fraction", kRecoveredFraction},
      {"pre_crash_throughput_ops_s", pre_rate},
      {"pre_crash_interval_cv", coefficient_of_variation(before, pre_rate)},
      {"pre_crash_intervals_at_threshold",
       static_cast<double>(pre_at_threshold) / static_cast<double>(before.size())},
      {"crash_to_reopen_seconds", seconds_between(crashed.crash, restarted.reopen_start)},
      {"reopen_seconds", seconds_between(restarted.reopen_start, restarted.reopened)},
      {"table_open_seconds", seconds_between(restarted.reopened, restarted.tables_open)},
      {"recovery_seconds", recovery_seconds},
      {"phases", phases_json(restarted.report, recovery_seconds)},
      {"recovery_work", recovery_work_json(restarted.report)},
      {"seconds_to_threshold", seconds_until_rate(after, threshold, restarted.reopen_start)},
      {"smoothing_seconds", kSmoothingSeconds},
      {"seconds_to_threshold_smoothed",
       seconds_until_mean_rate(after, threshold, kSmoothingSeconds, restarted.reopen_start)},
      {"seconds_to_half", seconds_until_rate(after, 0.5 * pre_rate, restarted.reopen_start)},
      {"warm_reads_tolerance", kWarmReadsTolerance},
      {"seconds_to_warm_reads",
       seconds_until_warm(before, crashed.ready.at("counters"), after,
                          restarted.counters_after_open, restarted.reopen_start)},
      {"after_restart_throughput_ops_s", totals_of(after).ops_s()},
      {"after_restart_ops_by_thread", totals_of(after).ops_by_thread},
      {"after_restart_second_half_ops_s", totals_of(after, after.size() / 2).ops_s()},
      {"recovery_counters", restarted.counters_after_open},
      {"after_restart_counters",
       counters_delta(restarted.counters_after_open, restarted.counters_after)},
      {"check", restarted.check},
      {"series",
       {{"before_crash", series_json(before, crashed.ready.at("counters"), crashed.crash)},
        {"after_restart", series_json(after, restarted.counters_after_open, crashed.crash)}}}};
  return result;
}

}  // namespace

nlohmann::json run_restart_bench(const BenchOptions& options) {
  // 1. The worker's run, killed; 2. the restart and the same workload; 3. the JSON.
  const ProgressPrinter progress(options.progress);
  const auto interval = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(options.sample_seconds));
  const CrashedRun crashed = run_until_crash(options, interval, progress);
  const RestartedRun restarted = restart_and_run(options, interval, progress, crashed.crash);
  return describe(options, crashed, restarted);
}

}  // namespace tristore
