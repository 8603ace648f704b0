#include "workloads/bench_restart_child.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/error.hpp"
#include "engine/database.hpp"
#include "workloads/bench_report.hpp"
#include "workloads/bench_restart_workload.hpp"

namespace tristore {

std::int64_t to_nanoseconds(SteadyClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

SteadyClock::time_point from_nanoseconds(std::int64_t ns) {
  return SteadyClock::time_point(
      std::chrono::duration_cast<SteadyClock::duration>(std::chrono::nanoseconds(ns)));
}

namespace {

// A message is one line of JSON; a pipe write of up to PIPE_BUF bytes is atomic, so a kill
// never leaves half a sample behind (a longer message may be cut, and is then dropped).
void send(int fd, const nlohmann::json& message) {
  const std::string line = message.dump() + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t written = ::write(fd, line.data() + done, line.size() - done);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) ::_exit(3);  // the parent is gone
    done += static_cast<std::size_t>(written);
  }
}

// The child's whole life: it ends by SIGKILL, or by _exit after reporting an error. It never
// returns into the caller's stack (no destructor of the parent's objects may run twice).
[[noreturn]] void run_until_killed(const BenchOptions& options, SteadyClock::duration interval,
                                   const ProgressPrinter& progress, int fd) {
  try {
    // 1. Open a new database and load it.
    std::unique_ptr<Database> db = Database::open(options.config);
    nlohmann::json load;
    std::unique_ptr<RestartWorkload> workload =
        RestartWorkload::create_and_load(*db, options, progress, load);
    // 2. Warm up, then tell the parent where the measured run starts.
    const PhaseResult warmup =
        run_phase(*db, "warmup", {options.warmup_seconds, 0}, progress, options.threads,
                  [&workload](unsigned thread) { workload->run_one(thread); });
    const MemoryUsage memory = db->memory_usage();
    send(fd, {{"kind", "ready"},
              {"t_ns", to_nanoseconds(SteadyClock::now())},
              {"load", load},
              {"warmup", phase_json(warmup)},
              {"memory", memory_json(memory)},
              {"data_bytes", tree_bytes(db->memory_usage())},
              {"nvm_is_pmem", db->nvm_is_pmem()},
              {"nvm_persistence", db->nvm_persistence()},
              {"counters", counters_json(db->counters())}});
    // 3. The workload, sampled, until the parent kills this process.
    run_sampled(
        *db, interval, options.threads, [&workload](unsigned thread) { workload->run_one(thread); },
        [fd](const ThroughputSample& sample) {
          send(fd, {{"kind", "sample"},
                    {"t_ns", to_nanoseconds(sample.end)},
                    {"seconds", sample.seconds},
                    {"ops", sample.ops},
                    {"ops_by_thread", sample.ops_by_thread},
                    {"counters", counters_json(sample.counters)}});
          return true;
        });
  } catch (const std::exception& error) {
    send(fd, {{"kind", "error"}, {"message", error.what()}});
    ::_exit(2);
  }
  ::_exit(1);
}

}  // namespace

CrashingChild::CrashingChild(const BenchOptions& options, SteadyClock::duration interval,
                             const ProgressPrinter& progress) {
  // 1. A pipe for the messages; nothing buffered in stdio may be printed twice.
  int fds[2];
  if (::pipe(fds) != 0) fail("--restart: pipe: {}", std::strerror(errno));
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    fail("--restart: fork: {}", std::strerror(errno));
  }
  // 2. The child dies with its parent, so an interrupted run leaves no worker behind.
  if (pid_ == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(3);
    run_until_killed(options, interval, progress, fds[1]);
  }
  ::close(fds[1]);
  fd_ = fds[0];
}

CrashingChild::~CrashingChild() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (fd_ >= 0) ::close(fd_);
}

bool CrashingChild::read_line(std::string& line) {
  for (;;) {
    const std::size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      line.assign(buffer_, 0, newline);
      buffer_.erase(0, newline + 1);
      return true;
    }
    char chunk[4096];
    const ssize_t got = ::read(fd_, chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(got));
  }
}

nlohmann::json CrashingChild::next_message() {
  std::string line;
  if (!read_line(line)) fail_with_child_status();
  nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
  if (message.is_discarded()) fail("--restart: unreadable message from the worker process");
  if (message.value("kind", "") == "error")
    fail("{}", message.value("message", "the worker process failed"));
  return message;
}

void CrashingChild::fail_with_child_status() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (WIFSIGNALED(status))
    fail("--restart: the worker process died of signal {} before the crash", WTERMSIG(status));
  fail("--restart: the worker process ended (status {}) before the crash", WEXITSTATUS(status));
}

SteadyClock::time_point CrashingChild::kill() {
  const SteadyClock::time_point at = SteadyClock::now();
  if (::kill(pid_, SIGKILL) != 0) fail("--restart: kill: {}", std::strerror(errno));
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) fail("--restart: waitpid: {}", std::strerror(errno));
  }
  pid_ = -1;
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
    fail("--restart: the worker process ended by itself (status {}), not by the crash",
         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return at;
}

std::vector<nlohmann::json> CrashingChild::drain() {
  std::vector<nlohmann::json> samples;
  std::string line;
  while (read_line(line)) {
    nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
    if (!message.is_discarded() && message.value("kind", "") == "sample")
      samples.push_back(std::move(message));
  }
  return samples;
}

}  // namespace tristore
