#pragma once
// What the threads of one benchmark loop share (run_phase, run_sampled): each thread's count of
// operations done, on a cache line of its own, a flag that stops them all, and the first
// exception one of them threw.
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tristore {

class PhaseThreads {
 public:
  explicit PhaseThreads(unsigned threads) : ops_(threads) {}
  PhaseThreads(const PhaseThreads&) = delete;
  PhaseThreads& operator=(const PhaseThreads&) = delete;

  unsigned count() const { return static_cast<unsigned>(ops_.size()); }
  // A thread's operations so far, published once per batch by the thread itself.
  void publish(unsigned thread, std::uint64_t ops) {
    ops_[thread].ops.store(ops, std::memory_order_relaxed);
  }
  std::uint64_t ops(unsigned thread) const {
    return ops_[thread].ops.load(std::memory_order_relaxed);
  }
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  void stop() { stop_.store(true, std::memory_order_relaxed); }

  // Runs body(t) on threads 1 .. count()-1 and body(0) on the caller's, until each returns.
  // An exception from one stops them all (stopping()); the first is rethrown once every
  // thread has ended.
  template <typename Body>
  void run(Body&& body) {
    const auto guarded = [&](unsigned thread) {
      try {
        body(thread);
      } catch (...) {
        stop();
        const std::lock_guard lock(failure_mutex_);
        if (!failure_) failure_ = std::current_exception();
      }
    };
    std::vector<std::thread> others;
    for (unsigned thread = 1; thread < count(); ++thread) others.emplace_back(guarded, thread);
    guarded(0);
    for (std::thread& other : others) other.join();
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  struct alignas(64) ThreadOps {
    std::atomic<std::uint64_t> ops{0};
  };
  std::vector<ThreadOps> ops_;
  std::atomic<bool> stop_{false};
  std::mutex failure_mutex_;
  std::exception_ptr failure_;
};

}  // namespace tristore
