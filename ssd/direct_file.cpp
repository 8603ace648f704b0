#include "ssd/direct_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/error.hpp"
#include "ssd/aligned_page_buffer.hpp"
#include "ssd/ssd_crash_simulator.hpp"

namespace tristore {

namespace {

std::string last_error() { return std::strerror(errno); }

void warn_no_direct_io_once(const std::string& path) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fprintf(stderr,
               "tristore: warning: the file system of %s refuses O_DIRECT; SSD I/O goes "
               "through the page cache, so SSD timings are not device timings\n",
               path.c_str());
}

}  // namespace

DirectFile::DirectFile(const std::string& path, Mode mode) : path_(path) {
  // 1. Open with O_DIRECT; tmpfs and a few others answer EINVAL, then open buffered.
  int flags = O_RDWR | O_CLOEXEC | (mode == Mode::kCreate ? O_CREAT : 0);
  fd_ = ::open(path.c_str(), flags | O_DIRECT, 0644);
  if (fd_ < 0 && errno == EINVAL) {
    fd_ = ::open(path.c_str(), flags, 0644);
    if (fd_ >= 0) direct_io_ = false;
  }
  if (fd_ < 0) {
    if (errno == ENOENT && mode == Mode::kOpen) fail("SSD file {} does not exist", path);
    fail("cannot open SSD file {}: {}", path, last_error());
  }
  // 2. Lock before truncating, so a file in use is never clobbered.
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    ::close(fd_);
    if (error == EWOULDBLOCK) fail("SSD file {} is already open (in use by another engine)", path);
    fail("cannot lock SSD file {}: {}", path, std::strerror(error));
  }
  // 3. Refuse what is not a regular file (a directory, a device we would overwrite).
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    fail("SSD file {} is not a regular file", path);
  }
  // (Warned only here: a file refused above gets its one-line error alone.)
  if (!direct_io_) warn_no_direct_io_once(path);
  if (mode == Mode::kCreate && ::ftruncate(fd_, 0) != 0) {
    int error = errno;
    ::close(fd_);
    fail("cannot truncate SSD file {}: {}", path, std::strerror(error));
  }
}

DirectFile::DirectFile(DirectFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      direct_io_(other.direct_io_),
      crash_(std::exchange(other.crash_, nullptr)) {}

DirectFile::~DirectFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t DirectFile::size() const {
  struct stat info {};
  if (::fstat(fd_, &info) != 0) fail("cannot stat SSD file {}: {}", path_, last_error());
  return static_cast<std::uint64_t>(info.st_size);
}

void DirectFile::reserve(std::uint64_t bytes) {
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0)
    fail("cannot size SSD file {} to {} bytes: {}", path_, bytes, last_error());
  if (crash_ != nullptr) [[unlikely]]
    crash_->on_resize(bytes);
  if (::fallocate(fd_, 0, 0, static_cast<off_t>(bytes)) == 0) return;
  if (errno == EOPNOTSUPP) return;  // sparse then; a full disk surfaces as a write error
  fail("cannot reserve {} bytes for SSD file {}: {}", bytes, path_, last_error());
}

void DirectFile::check_alignment(const char* operation, std::uint64_t offset, const void* buffer,
                                 std::size_t length) const {
  if (offset % kDirectIoAlignment != 0 || length % kDirectIoAlignment != 0 ||
      !is_direct_io_aligned(buffer))
    fail(
        "misaligned {} on SSD file {}: offset {}, length {}, buffer {} (all must be multiples "
        "of {})",
        operation, path_, offset, length, buffer, kDirectIoAlignment);
}

void DirectFile::read_exact(std::uint64_t offset, std::byte* buffer, std::size_t length) const {
  check_alignment("read", offset, buffer, length);
  std::size_t done = 0;
  while (done < length) {
    ssize_t got = ::pread(fd_, buffer + done, length - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("read of SSD file {} at offset {} failed: {}", path_, offset, last_error());
    if (got == 0)
      fail("short read of SSD file {} at offset {}: got {} of {} bytes (file truncated?)", path_,
           offset, done, length);
    done += static_cast<std::size_t>(got);
  }
}

void DirectFile::write_exact(std::uint64_t offset, const std::byte* buffer, std::size_t length) {
  check_alignment("write", offset, buffer, length);
  std::size_t done = 0;
  while (done < length) {
    ssize_t put = ::pwrite(fd_, buffer + done, length - done, static_cast<off_t>(offset + done));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) fail("write of SSD file {} at offset {} failed: {}", path_, offset, last_error());
    if (put == 0)
      fail("short write of SSD file {} at offset {}: put {} of {} bytes", path_, offset, done,
           length);
    done += static_cast<std::size_t>(put);
  }
  if (crash_ != nullptr) [[unlikely]]
    crash_->on_write(offset, buffer, length);
}

void DirectFile::sync_data() {
  if (crash_ != nullptr) [[unlikely]]
    return crash_->on_sync();
  if (::fdatasync(fd_) != 0) fail("fdatasync of SSD file {} failed: {}", path_, last_error());
}

void DirectFile::sync_directory() {
  std::filesystem::path directory = std::filesystem::absolute(path_).parent_path();
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open directory {} of SSD file: {}", directory.string(), last_error());
  int result = ::fsync(fd);
  int error = errno;
  ::close(fd);
  if (result != 0)
    fail("fsync of directory {} failed: {}", directory.string(), std::strerror(error));
}

}  // namespace tristore
