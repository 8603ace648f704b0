#pragma once
// The paper's three YCSB workloads (section 5.2) on one table, loaded with bulk_load:
//   ycsb-ro    point lookups reading one random field (get_part)
//   ycsb-rw    --update-ratio % updates of one random field (update_part), the rest lookups
//   ycsb-scan  range scans of uniform length in [1, 100] reading one random field per record
//              (or, with full_scan, whole-table scans: paper section 5.4.2)
// The micro mode uses 8-byte keys and values (section 5.5) and whole-value get/update.
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "engine/database.hpp"
#include "workloads/bench_phase.hpp"
#include "workloads/key_chooser.hpp"
#include "workloads/ycsb_record.hpp"

namespace tristore {

enum class YcsbKind { kReadOnly, kReadWrite, kScan };

std::string_view ycsb_kind_name(YcsbKind kind);  // "ycsb-ro", "ycsb-rw", "ycsb-scan"

struct YcsbOptions {
  YcsbKind kind = YcsbKind::kReadOnly;
  std::uint64_t records = 100'000;
  KeyDistribution distribution = KeyDistribution::kZipf;
  double zipf_theta = 1.0;
  double update_ratio_percent = 50;  // ycsb-rw only
  std::uint32_t max_scan_length = 100;
  bool full_scan = false;  // ycsb-scan: every scan visits the whole table from its first key
  bool micro = false;
  double fill_factor = 0.66;
  std::uint64_t seed = 42;
};

struct YcsbResult {
  PhaseResult load;
  MemoryUsage memory_after_load;
  PhaseResult warmup;
  PhaseResult measured;
  // Operations of the measured phase by kind; not_found should stay 0 (every key is loaded).
  std::uint64_t lookups = 0;
  std::uint64_t updates = 0;
  std::uint64_t scans = 0;
  std::uint64_t scanned_records = 0;
  std::uint64_t not_found = 0;
  double effective_theta = 0;
};

// Creates table "usertable", loads it, then runs the warm-up and the measured phase on
// `threads` threads (one key space, each thread its own random stream), calling
// before_measured (if set) between the two. Throws Error if the engine loses a loaded record.
YcsbResult run_ycsb(Database& db, const YcsbOptions& options, PhaseLimit warmup,
                    PhaseLimit measured, const ProgressPrinter& progress, unsigned threads = 1,
                    const std::function<void()>& before_measured = {});

// One operation at a time on table "usertable", for a driver that runs its own loop
// (tristore-bench --restart). create: a new table, to be loaded; open: the table of a
// reopened database (its losers' undo runs first), ready to run. `threads` workers share the
// key space, each with its own random stream: run_one(t) on one thread per worker.
class YcsbSession {
 public:
  static std::unique_ptr<YcsbSession> create(Database& db, const YcsbOptions& options,
                                             unsigned threads = 1);
  static std::unique_ptr<YcsbSession> open(Database& db, const YcsbOptions& options,
                                           unsigned threads = 1);
  virtual ~YcsbSession() = default;
  virtual PhaseResult load(const ProgressPrinter& progress) = 0;  // after create only
  virtual void run_one(unsigned thread = 0) = 0;                  // one operation of the mix
  virtual std::uint64_t not_found() const = 0;  // every worker's (not while they run); stays 0
};

// Key and value sizes of the table the options select.
inline std::uint64_t ycsb_key_bytes(const YcsbOptions& options) {
  return options.micro ? sizeof(YcsbMicroKey) : sizeof(YcsbKey);
}
inline std::uint64_t ycsb_value_bytes(const YcsbOptions& options) {
  return options.micro ? sizeof(YcsbMicroValue) : sizeof(YcsbRow);
}

}  // namespace tristore
