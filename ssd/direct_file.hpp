#pragma once
// A file descriptor for whole-block I/O with O_DIRECT, so SSD reads and writes bypass the page
// cache and cost what the device costs. File systems that refuse O_DIRECT (tmpfs) get buffered
// I/O and one warning per process on stderr. Every failure throws Error naming the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace tristore {

class SsdCrashSimulator;

class DirectFile {
 public:
  enum class Mode { kCreate, kOpen };

  // kCreate: create or truncate to zero length. kOpen: the file must exist. Both take an
  // exclusive advisory lock (flock), so two engines never share one SSD file.
  DirectFile(const std::string& path, Mode mode);
  ~DirectFile();
  DirectFile(DirectFile&& other) noexcept;
  DirectFile& operator=(DirectFile&&) = delete;

  const std::string& path() const { return path_; }
  bool direct_io() const { return direct_io_; }
  std::uint64_t size() const;

  // Sets the length to `bytes` and reserves the blocks, so a full disk shows up now, not later.
  void reserve(std::uint64_t bytes);

  // offset, length and buffer must be multiples of kDirectIoAlignment; a short transfer throws.
  void read_exact(std::uint64_t offset, std::byte* buffer, std::size_t length) const;
  void write_exact(std::uint64_t offset, const std::byte* buffer, std::size_t length);

  void sync_data();
  // Makes the file's directory entry durable (after create).
  void sync_directory();

  // Crash tests: writes, resizes and syncs are reported to `simulator` (nullptr: none), which
  // then owns durability, so sync_data skips the real fdatasync.
  void attach_crash_simulator(SsdCrashSimulator* simulator) { crash_ = simulator; }

 private:
  void check_alignment(const char* operation, std::uint64_t offset, const void* buffer,
                       std::size_t length) const;

  std::string path_;
  int fd_ = -1;
  bool direct_io_ = true;
  SsdCrashSimulator* crash_ = nullptr;
};

}  // namespace tristore
