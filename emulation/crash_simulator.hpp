#pragma once
// The persistence domain of an emulated NVM device. Beside the working image (the mapping)
// it keeps a durable image: what a power failure is guaranteed to leave. A flush remembers
// the line's content, the next fence makes it durable. At a crash every 8-byte word that
// differs between the two images survives or not at random (NVM writes are atomic at 8
// bytes), so crash tests see the torn states real hardware can produce, replayable by seed.
// Thread-safe: a fence here drains every thread's flushes (real fences drain only their own
// core's, which is why the log's committer flushes the records it waits for itself).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

namespace tristore {

struct SimulatedCrash : std::exception {
  const char* what() const noexcept override { return "simulated crash at an armed fence"; }
};

class CrashSimulator {
 public:
  // working: the mapped region, whose current content is taken as already durable.
  CrashSimulator(const std::byte* working, std::uint64_t size);

  // The n-th fence from now (1 = the next) throws SimulatedCrash before making anything durable.
  void arm_crash_at_fence(std::uint64_t n);
  void disarm();
  std::uint64_t fences() const;
  // True once an armed fence fired: the machine is down, nothing becomes durable any more.
  bool crashed() const;

  // Durable image plus every other 8-byte word that differs, kept or dropped at random.
  std::vector<std::byte> crash_image(std::uint64_t seed) const;
  // The same, as a file that NvmDevice can open.
  void write_crash_image(std::uint64_t seed, const std::string& path) const;
  // What survives every crash: only what was fenced.
  void write_durable_image(const std::string& path) const;
  // Call only while no thread flushes or fences.
  const std::vector<std::byte>& durable_image() const { return durable_; }

  // Called by NvmDevice::flush and NvmDevice::fence.
  void on_flush(const void* address, std::size_t length);
  void on_fence();

 private:
  struct FlushedLine {
    std::uint64_t line;
    std::byte content[64];
  };

  static void write_image(const std::vector<std::byte>& image, const std::string& path);

  mutable std::mutex mutex_;
  const std::byte* working_;
  std::uint64_t size_;
  std::vector<std::byte> durable_;
  std::vector<std::byte> at_crash_;   // the working image when the armed fence fired
  std::vector<FlushedLine> flushed_;  // flushed since the last fence
  std::uint64_t fences_ = 0;
  std::uint64_t crash_at_fence_ = 0;  // 0 = disarmed
  bool crashed_ = false;
};

}  // namespace tristore
