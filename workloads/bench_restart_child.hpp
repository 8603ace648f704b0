#pragma once
// The process a --restart run crashes: forked before the database exists, it opens it, loads,
// warms up and then runs the workload without end, sending the throughput of every sampling
// interval up a pipe, until the parent kills it with SIGKILL in the middle of an operation.
// Nothing is flushed or closed: NVM and SSD keep exactly what had reached them.
#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <string>

#include "workloads/bench_options.hpp"
#include "workloads/bench_phase.hpp"
#include "workloads/bench_restart_sampler.hpp"

namespace tristore {

class CrashingChild {
 public:
  // Forks; the child runs the workload and never returns from here.
  CrashingChild(const BenchOptions& options, SteadyClock::duration interval,
                const ProgressPrinter& progress);
  ~CrashingChild();  // a child still alive (an error path) is killed and reaped
  CrashingChild(const CrashingChild&) = delete;
  CrashingChild& operator=(const CrashingChild&) = delete;

  // The child's next message: {"kind": "ready", ...} once, after its warm-up, then
  // {"kind": "sample", ...} per interval. Error if the child failed or died.
  nlohmann::json next_message();
  // SIGKILL now. Returns when the child is reaped; Error unless SIGKILL is what ended it.
  SteadyClock::time_point kill();
  // Samples the child sent before it died that were not read yet.
  std::vector<nlohmann::json> drain();
  pid_t pid() const { return pid_; }

 private:
  bool read_line(std::string& line);  // false at end of file
  [[noreturn]] void fail_with_child_status();

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
};

// Message fields shared by both sides.
std::int64_t to_nanoseconds(SteadyClock::time_point t);
SteadyClock::time_point from_nanoseconds(std::int64_t ns);

}  // namespace tristore
