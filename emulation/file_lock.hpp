#pragma once
// An exclusive advisory lock (flock) on a file, held while this object lives: one engine per
// database file, whether the second opener is in this process or another.
#include <string>
#include <string_view>

namespace tristore {

class FileLock {
 public:
  FileLock() = default;
  // Opens `path` read-write (creating it when `create`) and locks it without waiting. Errors
  // name the file as "<what> file <path>": missing, or "... is already open ..." when held.
  FileLock(const std::string& path, bool create, std::string_view what);
  ~FileLock();
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;

  // The locked descriptor (e.g. to truncate the file once it is ours); -1 when none.
  int fd() const { return fd_; }

 private:
  // flock, not fcntl: its lock belongs to this open file description, so another descriptor
  // of the same file opened and closed meanwhile (libpmem's mapping does that) keeps it, and a
  // second open in this process is refused like one in another process.
  int fd_ = -1;
};

}  // namespace tristore
