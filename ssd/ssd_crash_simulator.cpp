#include "ssd/ssd_crash_simulator.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/splitmix64.hpp"
#include "ssd/aligned_page_buffer.hpp"
#include "ssd/direct_file.hpp"

namespace tristore {

static_assert(SsdCrashSimulator::kSectorSize == kDirectIoAlignment,
              "DirectFile's writes are whole sectors");

namespace {

bool all_zero(const std::byte* bytes, std::size_t length) {
  return std::all_of(bytes, bytes + length, [](std::byte b) { return b == std::byte{0}; });
}

}  // namespace

SsdCrashSimulator::SsdCrashSimulator(const DirectFile& file) : size_(file.size()) {
  // The file's content is durable; only sectors that are not zero need remembering.
  if (size_ % kSectorSize != 0)
    fail("SSD crash simulation: {} is {} bytes, not a whole number of {} byte sectors", file.path(),
         size_, kSectorSize);
  constexpr std::size_t kChunk = 64 * kSectorSize;
  AlignedPageBuffer chunk(kChunk);
  for (std::uint64_t offset = 0; offset < size_; offset += kChunk) {
    const std::size_t length =
        static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, size_ - offset));
    file.read_exact(offset, chunk.data(), length);
    for (std::size_t at = 0; at < length; at += kSectorSize)
      if (!all_zero(chunk.data() + at, kSectorSize))
        store(durable_, offset + at, chunk.data() + at, kSectorSize);
  }
}

void SsdCrashSimulator::set_machine_down_check(std::function<bool()> machine_down) {
  std::lock_guard lock(mutex_);
  machine_down_ = std::move(machine_down);
}

void SsdCrashSimulator::crash() {
  std::lock_guard lock(mutex_);
  frozen_ = true;
}

bool SsdCrashSimulator::frozen() const {
  std::lock_guard lock(mutex_);
  return frozen_locked();
}

bool SsdCrashSimulator::frozen_locked() const {
  // Latched: the machine does not come back up when the check changes its mind.
  if (!frozen_ && machine_down_ && machine_down_()) frozen_ = true;
  return frozen_;
}

std::uint64_t SsdCrashSimulator::size() const {
  std::lock_guard lock(mutex_);
  return size_;
}
std::uint64_t SsdCrashSimulator::writes() const {
  std::lock_guard lock(mutex_);
  return writes_;
}
std::uint64_t SsdCrashSimulator::syncs() const {
  std::lock_guard lock(mutex_);
  return syncs_;
}
std::uint64_t SsdCrashSimulator::unsynced_writes() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

void SsdCrashSimulator::on_resize(std::uint64_t bytes) {
  // A length change is taken as durable at once (the engine syncs right after creating).
  std::lock_guard lock(mutex_);
  if (frozen_locked()) return;
  size_ = bytes;
  truncate(durable_, bytes);
}

void SsdCrashSimulator::on_write(std::uint64_t offset, const std::byte* bytes, std::size_t length) {
  std::lock_guard lock(mutex_);
  if (frozen_locked() || length == 0) return;
  pending_.push_back({offset, std::vector<std::byte>(bytes, bytes + length)});
  size_ = std::max(size_, offset + length);
  ++writes_;
}

void SsdCrashSimulator::on_sync() {
  std::lock_guard lock(mutex_);
  if (frozen_locked()) return;
  for (const PendingWrite& write : pending_)
    store(durable_, write.offset, write.bytes.data(), write.bytes.size());
  pending_.clear();
  ++syncs_;
}

void SsdCrashSimulator::store(Image& image, std::uint64_t offset, const std::byte* bytes,
                              std::size_t length) {
  for (std::size_t at = 0; at < length; at += kSectorSize)
    std::memcpy(image[(offset + at) / kSectorSize].data(), bytes + at, kSectorSize);
}

void SsdCrashSimulator::truncate(Image& image, std::uint64_t bytes) {
  image.erase(image.lower_bound((bytes + kSectorSize - 1) / kSectorSize), image.end());
}

SsdCrashSimulator::Image SsdCrashSimulator::image_for(std::uint64_t seed) const {
  // Replayed in issue order, so a sector written twice ends as the last write kept there
  // (or the durable content): any state a reordering cache can leave.
  std::lock_guard lock(mutex_);
  Image image = durable_;
  std::uint64_t state = seed;
  for (const PendingWrite& write : pending_) {
    const std::uint64_t fate = splitmix64_next(state) % 3;  // 0 whole, 1 dropped, 2 torn
    if (fate == 1) continue;
    std::uint64_t bits = 0;
    for (std::size_t at = 0; at < write.bytes.size(); at += kSectorSize) {
      if (fate == 2) {
        if (at % (64 * kSectorSize) == 0) bits = splitmix64_next(state);
        const bool kept = (bits >> (at / kSectorSize % 64)) & 1;
        if (!kept) continue;
      }
      store(image, write.offset + at, write.bytes.data() + at, kSectorSize);
    }
  }
  truncate(image, size_);
  return image;
}

std::vector<std::byte> SsdCrashSimulator::crash_image(std::uint64_t seed) const {
  const Image image = image_for(seed);
  std::vector<std::byte> bytes(size());
  for (const auto& [sector, content] : image)
    std::memcpy(bytes.data() + sector * kSectorSize, content.data(),
                std::min<std::uint64_t>(kSectorSize, bytes.size() - sector * kSectorSize));
  return bytes;
}

void SsdCrashSimulator::write_crash_image(std::uint64_t seed, const std::string& path) const {
  // Sparse: only sectors that were ever written are stored.
  const Image image = image_for(seed);
  const std::uint64_t length = size();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write SSD crash image {}: {}", path, std::strerror(errno));
  auto fail_closing = [&](const char* what) {
    const int error = errno;
    ::close(fd);
    fail("cannot write SSD crash image {}: {} failed: {}", path, what, std::strerror(error));
  };
  if (::ftruncate(fd, static_cast<off_t>(length)) != 0) fail_closing("ftruncate");
  for (const auto& [sector, content] : image) {
    const std::uint64_t offset = sector * kSectorSize;
    const std::size_t bytes =
        static_cast<std::size_t>(std::min<std::uint64_t>(kSectorSize, length - offset));
    std::size_t done = 0;
    while (done < bytes) {
      const ssize_t n =
          ::pwrite(fd, content.data() + done, bytes - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail_closing("pwrite");
      done += static_cast<std::size_t>(n);
    }
  }
  ::close(fd);
}

}  // namespace tristore
