#pragma once
// A disk with a volatile write cache, for crash tests of the SSD file. It keeps the durable
// image (what the file held at the last sync_data) and the writes issued since, in order. At a
// crash each of those writes reached the medium whole, not at all, or torn at 4 KiB sector
// granularity (sectors are written atomically), chosen at random from a seed, so a crash test
// sees every state a real disk can leave, replayable.
//
// The machine going down is one event for NVM and SSD alike: once the "machine is down" check
// (typically the NVM CrashSimulator's crashed()) answers true, or crash() was called, nothing
// written or synced afterwards counts. DirectFile calls the on_* hooks when one is attached.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tristore {

class DirectFile;

class SsdCrashSimulator {
 public:
  static constexpr std::size_t kSectorSize = 4096;  // the device's atomic write unit

  // The file's current content is taken as durable.
  explicit SsdCrashSimulator(const DirectFile& file);

  // Checked on every write, resize and sync: once it answers true the simulator is frozen.
  void set_machine_down_check(std::function<bool()> machine_down);
  // The machine dies now (without an NVM simulator).
  void crash();
  bool frozen() const;

  // Unsynced writes reach the crash image whole, dropped or torn by sector, chosen by `seed`.
  std::vector<std::byte> crash_image(std::uint64_t seed) const;
  // The same as a file that SsdPageFile can open; Error if it cannot be written.
  void write_crash_image(std::uint64_t seed, const std::string& path) const;

  std::uint64_t size() const;
  std::uint64_t writes() const;           // counted writes, synced or not
  std::uint64_t syncs() const;            // counted sync_data calls
  std::uint64_t unsynced_writes() const;  // writes a crash now could lose or tear

  // Called by DirectFile after each successful operation.
  void on_resize(std::uint64_t bytes);
  void on_write(std::uint64_t offset, const std::byte* bytes, std::size_t length);
  void on_sync();

 private:
  using Sector = std::array<std::byte, kSectorSize>;
  using Image = std::map<std::uint64_t, Sector>;  // sector index -> content; absent = zeros
  struct PendingWrite {
    std::uint64_t offset;
    std::vector<std::byte> bytes;
  };

  bool frozen_locked() const;
  Image image_for(std::uint64_t seed) const;
  static void store(Image& image, std::uint64_t offset, const std::byte* bytes, std::size_t length);
  static void truncate(Image& image, std::uint64_t bytes);

  mutable std::mutex mutex_;  // SsdPageFile allows concurrent writes of distinct pages
  std::function<bool()> machine_down_;
  mutable bool frozen_ = false;
  std::uint64_t size_ = 0;
  Image durable_;
  std::vector<PendingWrite> pending_;
  std::uint64_t writes_ = 0;
  std::uint64_t syncs_ = 0;
};

}  // namespace tristore
