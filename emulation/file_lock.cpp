#include "emulation/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.hpp"

namespace tristore {

FileLock::FileLock(const std::string& path, bool create, std::string_view what) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0666);
  if (fd_ < 0) {
    if (errno == ENOENT && !create) fail("{} file {} does not exist", what, path);
    fail("cannot open {} file {}: {}", what, path, std::strerror(errno));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(std::exchange(fd_, -1));
    if (error == EWOULDBLOCK)
      fail("{} file {} is already open (in use by another engine)", what, path);
    fail("cannot lock {} file {}: {}", what, path, std::strerror(error));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

}  // namespace tristore
