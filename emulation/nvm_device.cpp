#include "emulation/nvm_device.hpp"

#include <numa.h>
#include <numaif.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/error.hpp"

namespace tristore {

namespace {

void check_numa_node_exists(int node) {
  if (numa_available() < 0)
    fail("NUMA node {} requested, but this system has no NUMA support", node);
  const int max_node = numa_max_node();
  if (node > max_node ||
      numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(node)) == 0)
    fail("NUMA node {} does not exist (this machine has nodes 0..{})", node, max_node);
}

}  // namespace

std::string default_nvm_path(const std::string& tag) {
  return "/dev/shm/tristore-" + tag + "-" + std::to_string(::getpid()) + ".nvm";
}

NvmDevice::NvmDevice(const NvmDeviceOptions& options)
    : path_(options.path),
      read_ns_(options.read_ns),
      write_ns_(options.write_ns),
      llc_filter_(options.llc_filter) {
  // 1. Check everything we can before touching the file system.
  if (path_.empty()) fail("NVM path is empty");
  if (options.numa_node < -1)
    fail("NUMA node {} is not valid (use -1 for no binding)", options.numa_node);
  if (options.numa_node >= 0) check_numa_node_exists(options.numa_node);
  if (options.create && options.size_bytes == 0)
    fail("NVM size must be greater than 0 to create {}", path_);
  SimulatedLlc::require_valid_size(options.llc_bytes);

  // 2. Lock the file before anything changes it: two engines on one NVM file would
  //    overwrite each other's pages and log. A create truncates only a file it holds.
  lock_ = FileLock(path_, options.create, "NVM");

  // 3. Map the file: a new one (truncated, then sized and allocated) or an existing one.
  std::size_t mapped_length = 0;
  int is_pmem = 0;
  void* address = nullptr;
  if (options.create) {
    if (::ftruncate(lock_.fd(), 0) != 0)
      fail("cannot truncate NVM file {}: {}", path_, std::strerror(errno));
    address = pmem_map_file(path_.c_str(), options.size_bytes, PMEM_FILE_CREATE, 0666,
                            &mapped_length, &is_pmem);
    if (address == nullptr) {
      // Sized but not allocated (no room, say): no half-made file stays behind.
      const std::string error = pmem_errormsg();
      ::unlink(path_.c_str());
      fail("cannot create NVM file {} of {} bytes: {}", path_, options.size_bytes, error);
    }
  } else {
    struct stat status {};
    if (::fstat(lock_.fd(), &status) != 0)
      fail("cannot open NVM file {}: {}", path_, std::strerror(errno));
    if (S_ISREG(status.st_mode)) {
      const auto file_bytes = static_cast<std::uint64_t>(status.st_size);
      if (file_bytes == 0) fail("NVM file {} is empty", path_);
      if (options.size_bytes != 0 && options.size_bytes != file_bytes)
        fail("NVM file {} is {} bytes, expected {}", path_, file_bytes, options.size_bytes);
    }
    address = pmem_map_file(path_.c_str(), 0, 0, 0, &mapped_length, &is_pmem);
    if (address == nullptr) fail("cannot map NVM file {}: {}", path_, pmem_errormsg());
  }
  base_ = static_cast<std::byte*>(address);
  mapped_length_ = mapped_length;
  size_ = mapped_length;
  is_pmem_ = is_pmem != 0;

  // 4. How flushes persist, then the emulation extras; unmap again if one of them fails.
  try {
    persistence_ = choose_nvm_persistence(is_pmem_, path_, options.accept_weak_durability);
    if (options.numa_node >= 0 && !is_pmem_) bind_to_numa_node(options.numa_node);
    if (read_ns_ != 0 || write_ns_ != 0) {
      tsc_ = TscClock::calibrate();
      read_ticks_ = tsc_->ticks(read_ns_);
      write_ticks_ = tsc_->ticks(write_ns_);
      llc_ = std::make_unique<SimulatedLlc>(options.llc_bytes);
    }
    if (options.crash_simulation) crash_ = std::make_unique<CrashSimulator>(base_, size_);
    if (options.wear_counting)
      wear_ = std::make_unique<WearCounters>((size_ + kCacheLineSize - 1) / kCacheLineSize);
  } catch (...) {
    pmem_unmap(base_, mapped_length_);
    throw;
  }
}

NvmDevice::~NvmDevice() { pmem_unmap(base_, mapped_length_); }

Counters NvmDevice::counters() const {
  const auto count = [](const std::atomic<std::uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  Counters total;
  for (const LineCounts& lines : line_counts_) {
    total.llc_misses += count(lines.llc_misses);
    total.nvm_lines_read += count(lines.read);
    total.nvm_lines_written += count(lines.written);
    total.nvm_double_write_lines_written += count(lines.double_written);
  }
  for (const LogCounters& log : log_counters_) {
    const std::uint64_t log_lines =
        count(log.record_lines_written) + count(log.header_lines_written);
    total.nvm_lines_written += log_lines;
    total.nvm_log_lines_written += log_lines;
    total.log_bytes_written += count(log.bytes_written);
    total.log_records += count(log.records);
    total.log_checkpoints += count(log.checkpoints);
    total.log_checkpoints_beside += count(log.checkpoints_beside);
  }
  return total;
}

void NvmDevice::msync(const void* nvm, std::size_t length) {
  msync_calls_.fetch_add(1, std::memory_order_relaxed);
  // pmem_msync widens the range to whole pages itself.
  if (pmem_msync(nvm, length) != 0)
    fail("cannot persist NVM file {} (msync): {}", path_, pmem_errormsg());
}

void NvmDevice::bind_to_numa_node(int node) {
  // On DAX the node is the one the device sits on; on tmpfs the pages follow this policy.
  bitmask* nodes = numa_allocate_nodemask();
  numa_bitmask_setbit(nodes, static_cast<unsigned>(node));
  const long result =
      mbind(base_, mapped_length_, MPOL_BIND, nodes->maskp, nodes->size + 1, MPOL_MF_MOVE);
  const int error = errno;
  numa_bitmask_free(nodes);
  if (result != 0)
    fail("cannot bind NVM file {} to NUMA node {}: {}", path_, node, std::strerror(error));
}

void NvmDevice::charge_read_latency(std::uint64_t first_line, std::uint64_t count) {
  const std::uint64_t misses = llc_filter_ ? llc_->access_lines(first_line, count) : count;
  if (misses == 0) return;
  add_in_own_slot(line_counts_[thread_slot()].llc_misses, misses);
  tsc_->spin_ticks(read_ticks_ * overlapped_latencies(misses));
}

void NvmDevice::charge_write_latency(std::uint64_t first_line, std::uint64_t count) {
  // A written line sits in the cache afterwards; the write itself always reaches NVM.
  llc_->access_lines(first_line, count);
  if (write_ticks_ != 0) tsc_->spin_ticks(write_ticks_ * overlapped_latencies(count));
}

}  // namespace tristore
