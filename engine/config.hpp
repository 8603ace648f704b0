#pragma once
// Everything needed to open a database: one value, validated by Database::open.
#include <cstdint>
#include <string>
#include <string_view>

namespace tristore {

// Every architecture but main-memory is durable: write-ahead log in NVM (ssd-bm: an NVM file
// at nvm_path holding only the log), restart after a crash. main-memory transactions are
// atomic (abort rolls back) but volatile.
enum class Architecture { kThreeTier, kBasicNvm, kNvmDirect, kSsdBm, kMainMemory };

// "3tier", "basic-nvm", "nvm-direct", "ssd-bm", "main-memory" (the --arch spellings).
std::string_view architecture_name(Architecture arch);
Architecture parse_architecture(std::string_view name);  // throws Error on an unknown name

// What Database::open does with the files at nvm_path and ssd_path (those the architecture
// uses). Only kCreateReplacing ever destroys an existing file.
enum class OpenMode {
  kOpenOrCreate,     // open the database if its files exist, create it if none exists
  kOpenExisting,     // open; a missing file is an Error
  kCreateNew,        // create; an existing file is an Error and stays untouched
  kCreateReplacing,  // create, discarding whatever the files held (experiments, tests)
};

// "open-or-create", "open-existing", "create-new", "create-replacing".
std::string_view open_mode_name(OpenMode mode);

inline constexpr std::uint64_t kMiB = 1024 * 1024;
inline constexpr std::uint64_t kGiB = 1024 * kMiB;

struct Config {
  Architecture architecture = Architecture::kThreeTier;
  std::uint64_t dram_bytes = 200 * kMiB;  // buffer pool: frames + mini pages, a hard limit
  // Sizes of new files; an opened database keeps the sizes its files were created with.
  std::uint64_t nvm_bytes = 1 * kGiB;  // NVM file: superblock + log area + page slots
  std::uint64_t ssd_bytes = 5 * kGiB;  // SSD page file
  std::string nvm_path = "/dev/shm/tristore.nvm";
  std::string ssd_path;            // empty: $TMPDIR (or /tmp)/tristore.ssd
  std::uint32_t nvm_read_ns = 0;   // injected per NVM cache line read (LLC misses only)
  std::uint32_t nvm_write_ns = 0;  // injected per NVM cache line written back
  std::uint64_t llc_bytes = 0;     // simulated last-level cache; 0: this machine's LLC
  int numa_node = -1;              // bind the NVM region to this node; -1: no binding
  // An NVM file neither on DAX nor on tmpfs is persisted with msync (emulation/
  // nvm_persistence.hpp); true: with cache-line flushes only, which survive a process crash
  // but not a power loss.
  bool nvm_weak_durability = false;
  // Not in the paper: while NVM has free slots, a page evicted from DRAM goes there without
  // asking the admission set (saves SSD writes during warm-up; docs/design.md section 3).
  bool admit_while_nvm_has_free_slots = true;
  // SSD page writes of evictions and checkpoints queued behind the engine, written by the SSD
  // file's own threads (ssd/write_behind_queue.hpp); 0: each is written before the caller goes
  // on, as in the paper. At most kMaxSsdWriteBehindPages.
  std::uint32_t ssd_write_behind_pages = 64;
  static constexpr std::uint32_t kMaxSsdWriteBehindPages = 4096;
  bool cache_line_grained = true;  // 3tier switches (paper Figure 10)
  bool mini_pages = true;
  bool swizzling = true;
  std::uint64_t admission_set_size = 0;  // 0: the default (see tiers/admission_set.hpp)
  bool nvm_wear_counting = false;        // count writes per NVM cache line (Database::nvm_wear)
  bool nvm_crash_simulation = false;     // tests: Database::nvm_crash_simulator()
  bool ssd_crash_simulation = false;     // tests: Database::ssd_crash_simulator(), frozen
                                         // when the NVM crash simulator's armed fence fires
  OpenMode open_mode = OpenMode::kOpenOrCreate;
  // A checkpoint runs once this many log bytes were appended since the last one, so that
  // restart replays at most about this much (and the log never runs full first). 0: a quarter
  // of the log's capacity. Durable architectures only.
  std::uint64_t checkpoint_interval_bytes = 0;
};

}  // namespace tristore
