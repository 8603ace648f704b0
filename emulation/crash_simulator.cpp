#include "emulation/crash_simulator.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/ignoring_racing_reads.hpp"
#include "common/splitmix64.hpp"

namespace tristore {

CrashSimulator::CrashSimulator(const std::byte* working, std::uint64_t size)
    : working_(working), size_(size), durable_(working, working + size) {}

void CrashSimulator::arm_crash_at_fence(std::uint64_t n) {
  if (n == 0) fail("arm_crash_at_fence needs n >= 1 (1 = the next fence)");
  std::lock_guard lock(mutex_);
  crash_at_fence_ = fences_ + n;
}

void CrashSimulator::disarm() {
  std::lock_guard lock(mutex_);
  crash_at_fence_ = 0;
}

std::uint64_t CrashSimulator::fences() const {
  std::lock_guard lock(mutex_);
  return fences_;
}

bool CrashSimulator::crashed() const {
  std::lock_guard lock(mutex_);
  return crashed_;
}

void CrashSimulator::on_flush(const void* address, std::size_t length) {
  std::lock_guard lock(mutex_);
  if (crashed_ || length == 0) return;
  const auto offset = static_cast<std::uint64_t>(static_cast<const std::byte*>(address) - working_);
  assert(offset + length <= size_);
  const std::uint64_t last = (offset + length - 1) / 64;
  for (std::uint64_t line = offset / 64; line <= last; ++line) {
    FlushedLine& flushed = flushed_.emplace_back();
    flushed.line = line;
    const std::uint64_t bytes = std::min<std::uint64_t>(64, size_ - line * 64);
    // Other threads may be writing other bytes of the line (a flush takes it as it is).
    [[maybe_unused]] const IgnoringRacingReads racing;
    std::memcpy(flushed.content, working_ + line * 64, bytes);
  }
}

void CrashSimulator::on_fence() {
  std::lock_guard lock(mutex_);
  if (crashed_) return;
  ++fences_;
  if (crash_at_fence_ != 0 && fences_ == crash_at_fence_) {
    // The machine dies here: freeze what the caches held so later stores do not leak in.
    crashed_ = true;
    crash_at_fence_ = 0;
    {
      // Other threads go on writing: the memory as the power failure finds it.
      [[maybe_unused]] const IgnoringRacingReads racing;
      at_crash_.assign(working_, working_ + size_);
    }
    throw SimulatedCrash();
  }
  for (const FlushedLine& flushed : flushed_) {
    const std::uint64_t bytes = std::min<std::uint64_t>(64, size_ - flushed.line * 64);
    std::memcpy(durable_.data() + flushed.line * 64, flushed.content, bytes);
  }
  flushed_.clear();
}

std::vector<std::byte> CrashSimulator::crash_image(std::uint64_t seed) const {
  std::lock_guard lock(mutex_);
  const std::byte* working = crashed_ ? at_crash_.data() : working_;
  std::vector<std::byte> image = durable_;
  std::uint64_t state = seed;
  std::uint64_t random_bits = 0;
  int bits_left = 0;
  for (std::uint64_t offset = 0; offset + 8 <= size_; offset += 8) {
    if (std::memcmp(working + offset, image.data() + offset, 8) == 0) continue;
    if (bits_left == 0) {
      random_bits = splitmix64_next(state);
      bits_left = 64;
    }
    if (random_bits & 1) std::memcpy(image.data() + offset, working + offset, 8);
    random_bits >>= 1;
    --bits_left;
  }
  return image;
}

void CrashSimulator::write_crash_image(std::uint64_t seed, const std::string& path) const {
  write_image(crash_image(seed), path);
}

void CrashSimulator::write_durable_image(const std::string& path) const {
  std::lock_guard lock(mutex_);
  write_image(durable_, path);
}

void CrashSimulator::write_image(const std::vector<std::byte>& image, const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) fail("cannot write crash image {}: {}", path, std::strerror(errno));
  std::size_t written = 0;
  while (written < image.size()) {
    const ssize_t n = ::write(fd, image.data() + written, image.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      fail("cannot write crash image {}: {}", path, std::strerror(error));
    }
    written += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

}  // namespace tristore
