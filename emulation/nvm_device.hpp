#pragma once
// A file mapped as NVM with libpmem. How a flush persists depends on the file
// (emulation/nvm_persistence.hpp): on a DAX file system (real PMem, or DRAM reserved with
// memmap= and mounted -o dax) pmem_is_pmem() holds and pmem_flush + pmem_drain reach the
// persistence domain: data survives power loss. On tmpfs (/dev/shm, the default) we issue the
// very same instructions, so their cost is the same; the data then survives a process crash
// (tmpfs outlives the process) but not a power loss or a reboot. On any other file a flush is
// pmem_msync of the pages that hold the range, unless weaker durability was accepted.
//
// Emulation on top: injected read/write latency per cache line (TSC busy-wait) for lines that
// miss a simulated LLC, a crash simulator (durable image beside the working one), per-line
// wear counters, NUMA placement. With latency 0 the charge calls only count lines.
// Every thread charges the device side by side: lines read and written (and the simulated
// LLC's misses) are counted per thread, the simulated LLC latches its sets in stripes, and the
// wear counters count atomically. A thread that charges latency spins for it itself, outside
// any of these latches, as a core waits for its own line fills.
#include <libpmem.h>

#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "common/counters.hpp"
#include "common/thread_slot.hpp"
#include "common/types.hpp"
#include "emulation/crash_simulator.hpp"
#include "emulation/file_lock.hpp"
#include "emulation/llc_simulator.hpp"
#include "emulation/nvm_persistence.hpp"
#include "emulation/tsc.hpp"
#include "emulation/wear_counters.hpp"

namespace tristore {

// A file under /dev/shm unique to this process and tag, e.g. for tests and defaults.
std::string default_nvm_path(const std::string& tag = "nvm");

struct NvmDeviceOptions {
  std::string path;              // file to map (DAX file system or tmpfs)
  std::uint64_t size_bytes = 0;  // create: file size; open: 0 = the file's size, else must match
  bool create = false;           // true: create/truncate; false: open existing
  int numa_node = -1;            // bind the mapping to this NUMA node (mbind); -1 = no binding
  std::uint32_t read_ns = 0;     // injected latency per NVM line read that misses the simulated LLC
  std::uint32_t write_ns = 0;    // injected latency per NVM line written
  std::uint64_t llc_bytes = 0;   // simulated LLC size; 0 = this machine's LLC; 16-way
  bool llc_filter = true;        // false: charge read latency for every line (no simulated LLC)
  bool crash_simulation = false;  // keep a durable image beside the working one (tests)
  bool wear_counting = false;     // per-line write counters
  // A file neither DAX nor tmpfs: flush with cache instructions only (NvmPersistence::kWeak,
  // survives a process crash) instead of pmem_msync (kMsync).
  bool accept_weak_durability = false;
};

class NvmDevice {
 public:
  // Takes an exclusive lock on the file (flock) for the device's lifetime: a second device on
  // the same file, in this process or another, is an Error "... is already open ...".
  explicit NvmDevice(const NvmDeviceOptions& options);  // throws Error
  ~NvmDevice();
  NvmDevice(const NvmDevice&) = delete;
  NvmDevice& operator=(const NvmDevice&) = delete;

  std::byte* base() const { return base_; }
  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  bool is_pmem() const { return is_pmem_; }
  NvmPersistence persistence() const { return persistence_; }
  std::uint64_t msync_calls() const { return msync_calls_.load(std::memory_order_relaxed); }
  bool contains(const void* p) const {
    auto* b = static_cast<const std::byte*>(p);
    return b >= base_ && b < base_ + size_;
  }
  std::uint32_t read_ns() const { return read_ns_; }
  std::uint32_t write_ns() const { return write_ns_; }

  void read(void* dram_dst, const std::byte* nvm_src, std::size_t length) {
    std::memcpy(dram_dst, nvm_src, length);
    charge_read(nvm_src, length);
  }
  void charge_read(const std::byte* nvm, std::size_t length) {
    if (length == 0) return;
    const auto [first, count] = line_range(nvm, length);
    add_in_own_slot(line_counts_[thread_slot()].read, count);
    if (read_ns_ != 0) [[unlikely]]
      charge_read_latency(first, count);
  }

  // Not yet durable: follow with flush + fence (or persist).
  void write(std::byte* nvm_dst, const void* dram_src, std::size_t length) {
    std::memcpy(nvm_dst, dram_src, length);
    charge_write(nvm_dst, length);
  }
  // wear: count the lines in the per-line wear histogram, which covers the data area (pages,
  // slot headers, metadata) only: log and double-write lines are counted apart (paper Fig. 16).
  void charge_write(const std::byte* nvm, std::size_t length, bool wear = true) {
    if (length == 0) return;
    const auto [first, count] = line_range(nvm, length);
    add_in_own_slot(line_counts_[thread_slot()].written, count);
    if (wear_ && wear) [[unlikely]]
      wear_->record(first, count);
    if (llc_) [[unlikely]]
      charge_write_latency(first, count);
  }

  // A write to the log area, from any thread. Not counted here: the log counts its own lines
  // (log_counters()), which counters() reports as nvm_log_lines_written and within
  // nvm_lines_written, so that data-area writes (wear, paper Fig. 16) can be told apart.
  void write_log(std::byte* nvm_dst, const void* dram_src, std::size_t length) {
    std::memcpy(nvm_dst, dram_src, length);
    if (llc_ && length != 0) [[unlikely]] {
      const auto [first, count] = line_range(nvm_dst, length);
      charge_write_latency(first, count);
    }
  }

  // A write to the double-write area (tiers/double_write_area.hpp): counted in
  // nvm_lines_written and, apart, in nvm_double_write_lines_written.
  void write_double_write(std::byte* nvm_dst, const void* dram_src, std::size_t length) {
    std::memcpy(nvm_dst, dram_src, length);
    charge_write(nvm_dst, length, false);
    if (length != 0)
      add_in_own_slot(line_counts_[thread_slot()].double_written,
                      line_range(nvm_dst, length).count);
  }

  // The cache lines [nvm, nvm + length) touches (length > 0).
  std::uint64_t lines_touched(const std::byte* nvm, std::size_t length) const {
    return line_range(nvm, length).count;
  }

  // pmem_flush picks clwb / clflushopt / clflush at run time. kMsync: the range's pages are
  // written to the file (and so durable) before this returns; the fence adds nothing.
  void flush(const void* nvm, std::size_t length) {
    if (crash_) [[unlikely]]
      crash_->on_flush(nvm, length);
    if (persistence_ == NvmPersistence::kMsync) [[unlikely]]
      msync(nvm, length);
    else
      pmem_flush(nvm, length);
  }
  // pmem_drain (sfence). Crash simulation: flushed lines become durable; an armed fence throws
  // SimulatedCrash first.
  void fence() {
    if (crash_) [[unlikely]]
      crash_->on_fence();
    pmem_drain();
  }
  void persist(const void* nvm, std::size_t length) {
    flush(nvm, length);
    fence();
  }

  // The log's counts, kept by the log (engine/log_manager.cpp) on any thread, where the rest of
  // Counters is written by the one thread that owns the tier: one set per thread slot
  // (common/thread_slot.hpp), so that appenders on two cores write no common line, summed by
  // counters(). Each thread bumps its own set; two threads sharing a slot (more than
  // kThreadSlots) may lose a count, never more.
  struct alignas(64) LogCounters {
    std::atomic<std::uint64_t> record_lines_written{0};
    std::atomic<std::uint64_t> bytes_written{0};
    std::atomic<std::uint64_t> records{0};
    std::atomic<std::uint64_t> header_lines_written{0};  // header copies, erased areas
    std::atomic<std::uint64_t> checkpoints{0};
    std::atomic<std::uint64_t> checkpoints_beside{0};
  };
  LogCounters& log_counters() { return log_counters_[thread_slot()]; }
  Counters counters() const;
  CrashSimulator* crash_simulator() { return crash_.get(); }
  const WearCounters* wear() const { return wear_.get(); }
  // Present only when read_ns or write_ns is non-zero.
  SimulatedLlc* llc() { return llc_.get(); }

  // The misses of one request overlap, as a core keeps up to kMemoryLevelParallelism line
  // fills in flight: a request pays one latency per started batch of them (one line: 1, a
  // whole 16 KiB page: 26), not one per line. Without this a page copy would cost 256
  // latencies and page-grained NVM would look slower than an SSD.
  static constexpr std::uint64_t kMemoryLevelParallelism = 10;
  static constexpr std::uint64_t overlapped_latencies(std::uint64_t lines) {
    return (lines + kMemoryLevelParallelism - 1) / kMemoryLevelParallelism;
  }

 private:
  struct LineRange {
    std::uint64_t first;  // line index within the region
    std::uint64_t count;
  };
  LineRange line_range(const std::byte* nvm, std::size_t length) const {
    assert(contains(nvm) && contains(nvm + length - 1));
    const auto offset = static_cast<std::uint64_t>(nvm - base_);
    const std::uint64_t first = offset / kCacheLineSize;
    return {first, (offset + length - 1) / kCacheLineSize - first + 1};
  }
  void charge_read_latency(std::uint64_t first_line, std::uint64_t count);
  void charge_write_latency(std::uint64_t first_line, std::uint64_t count);
  void bind_to_numa_node(int node);
  void msync(const void* nvm, std::size_t length);

  std::string path_;
  FileLock lock_;  // held while mapped; released after the unmapping
  std::byte* base_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t mapped_length_ = 0;
  bool is_pmem_ = false;
  NvmPersistence persistence_ = NvmPersistence::kTmpfs;
  std::atomic<std::uint64_t> msync_calls_{0};
  std::uint32_t read_ns_ = 0;
  std::uint32_t write_ns_ = 0;
  std::uint64_t read_ticks_ = 0;
  std::uint64_t write_ticks_ = 0;
  bool llc_filter_ = true;
  std::optional<TscClock> tsc_;
  std::unique_ptr<SimulatedLlc> llc_;
  std::unique_ptr<CrashSimulator> crash_;
  std::unique_ptr<WearCounters> wear_;
  // Data-area lines, per thread slot as the log's counts are.
  struct alignas(64) LineCounts {
    std::atomic<std::uint64_t> read{0};
    std::atomic<std::uint64_t> written{0};
    std::atomic<std::uint64_t> double_written{0};  // of written, to the double-write area
    std::atomic<std::uint64_t> llc_misses{0};      // reads that missed the simulated LLC
  };
  std::array<LineCounts, kThreadSlots> line_counts_;
  std::array<LogCounters, kThreadSlots> log_counters_;
};

}  // namespace tristore
