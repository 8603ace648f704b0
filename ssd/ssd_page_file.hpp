#pragma once
// The SSD tier: one file of 16 KiB pages, read and written whole with O_DIRECT.
//
// File layout, in 16 KiB pages:
//   page 0                 two 4 KiB superblock copies (A at 0, B at 4 KiB), each with its
//   checksum,
//                          a generation number and the 2 KiB engine metadata area
//   pages 1 .. 2B          two copies of the allocation bitmap, B pages each: the allocated
//                          pages, then the claimed ones (see confirm_claims)
//   pages 1+2B ..          the data pages, SSD page ids 0 .. page_capacity()-1
// sync() writes the next generation's bitmap copy, then its superblock copy, so a crash in
// between leaves the previous generation intact (shadow copies; no torn superblock).
//
// Thread safety: read() and write() of distinct pages may run concurrently with each other and
// with allocate()/free(), and so may write_behind(); sync() and metadata() need the caller to hold
// off writers of metadata. Allocation becomes durable at sync(). A page's content is undefined
// between allocate() and its first write().
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/counters.hpp"
#include "common/error.hpp"
#include "common/types.hpp"
#include "ssd/checksum_mismatch.hpp"

namespace tristore {

class SsdCrashSimulator;

struct SsdOptions {
  std::string path;  // default chosen by the engine: $TMPDIR/tristore.ssd
  std::uint64_t size_bytes =
      0;                // create: capacity (superblock + bitmaps + pages); open: 0 or must match
  bool create = false;  // true: create/truncate; false: open (missing file -> Error)
  std::uint64_t database_id = 0;  // create: 0 picks a random id; open: != 0 must match
  std::string architecture;  // create: recorded in the superblock; open: must match (empty: any)
  std::uint32_t read_latency_ns = 0, write_latency_ns = 0;  // extra busy-wait per page I/O
  bool crash_simulation = false;  // tests: a disk with a volatile write cache (crash_simulator())
  // Page buffers of write_behind (ssd/write_behind_queue.hpp), apart from any DRAM budget;
  // 0: write_behind writes at once, as write does.
  std::size_t write_behind_pages = 64;
  std::size_t write_behind_threads = 4;  // writes in flight at once
  // Tests: runs on the reading thread before each page read (to hold reads in flight, or to
  // fail one by throwing).
  std::function<void(PageId)> before_read = {};
  // Shadow copies of the metadata are safe to fall back on only if the newer copy was never
  // completed. The caller keeps, elsewhere, the newest generation sync() completed:
  // called with each generation once it is durable (create included) ...
  std::function<void(std::uint64_t generation)> on_generation_durable = {};
  // ... and given at open: an intact copy older than this is refused with an Error (nullopt:
  // unknown, the newest intact copy is taken).
  std::optional<std::uint64_t> durable_generation = std::nullopt;
};

class SsdPageFile {
 public:
  static constexpr std::size_t kMetadataSize = 2048;

  // Creates (or truncates) the file and reserves size_bytes on disk.
  static std::unique_ptr<SsdPageFile> create(const SsdOptions& options);
  // Validates the superblock: magic, version, page size, capacity vs file size, architecture,
  // database id, checksums. Any mismatch throws Error with a one-line message. Writes nothing.
  static std::unique_ptr<SsdPageFile> open(const SsdOptions& options);
  // options.create ? create(options) : open(options).
  static std::unique_ptr<SsdPageFile> create_or_open(const SsdOptions& options);

  ~SsdPageFile();
  SsdPageFile(const SsdPageFile&) = delete;
  SsdPageFile& operator=(const SsdPageFile&) = delete;

  std::uint64_t database_id() const;
  std::uint64_t page_capacity() const;
  std::uint64_t pages_in_use() const;
  const std::string& path() const;
  // False when the file system refused O_DIRECT (tmpfs) and I/O goes through the page cache.
  bool direct_io() const;

  PageId allocate();  // lowest free page id; Error "SSD full (N pages)" when none
  void free(PageId id);
  bool is_allocated(PageId id) const;
  // A page allocated is also claimed: it is new, and until the engine saves a catalog that
  // keeps it (its tree reaches it) only the engine's log can say whether it is in use. The
  // claims are durable with the allocations, at sync(), so that restart can give back the
  // pages of an operation the crash cut short. confirm_claims() ends the claims made so far;
  // called as the catalog is written into metadata(), the same sync() makes both durable (the
  // caller holds off writers of metadata meanwhile, as for metadata()).
  void confirm_claims();
  std::vector<PageId> claimed_pages() const;
  // A page in use now that the metadata saved with the next confirm_claims() no longer keeps
  // (a bulk load's old root): that confirm claims it rather than ending its claim, so that
  // restart gives it back should the crash come before its free() is durable.
  void claim_at_next_confirm(PageId id);

  // Any alignment of `page` (a bounce buffer is used when it is not 4 KiB aligned). Verifies the
  // crc32c and that the header's page id is `id`; otherwise throws ChecksumMismatch and leaves
  // `page` zeroed.
  void read(PageId id, std::byte* page);
  // Writes a copy of `page` whose PageHeader carries `id` and the checksum; `page` is unchanged.
  // After a write_behind of the same page, once that one is written.
  void write(PageId id, const std::byte* page);
  // The same write, but it returns once the stamped copy is queued: a thread of the file's
  // writes it, in order. Meanwhile read() gives the copy, and sync() waits for it. Error once
  // an earlier write behind failed.
  void write_behind(PageId id, const std::byte* page);
  // Waits for the writes behind, then fdatasync the data, then persists the allocation bitmap
  // and the superblock (with metadata).
  void sync();

  // Engine metadata, persisted by sync().
  std::span<std::byte> metadata();
  std::span<const std::byte> metadata() const;

  const Counters& counters() const;
  // nullptr without SsdOptions::crash_simulation (ssd/ssd_crash_simulator.hpp).
  SsdCrashSimulator* crash_simulator();

 private:
  struct State;
  explicit SsdPageFile(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tristore
