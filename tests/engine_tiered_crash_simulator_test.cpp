// Power failures of the whole machine for the architectures with an SSD (3tier, ssd-bm): the
// NVM crash simulator cuts the run at the n-th fence, and at that moment the SSD crash
// simulator freezes too. A crash image of each keeps what was fenced (NVM) or synced (SSD);
// unfenced NVM words and unsynced SSD writes survive at random (SSD writes whole, dropped or
// torn by 4 KiB sector). The pools are so small that every tier moves pages during the run:
// DRAM evictions, NVM admissions, NVM-to-SSD write-backs, checkpoints. The database reopened
// from the images must hold every acknowledged commit, nothing aborted, the transaction in
// flight whole or not at all; after a clean close its files must hold a valid B-tree with the
// same rows, whose NVM slot headers agree with the page table and with the pages they hold.
// Seeds are printed; TRISTORE_SEED replays; TRISTORE_SOAK_ITERATIONS=N tries N times more fences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "btree/btree.hpp"
#include "common/error.hpp"
#include "common/page_format.hpp"
#include "emulation/crash_simulator.hpp"
#include "engine/catalog.hpp"
#include "engine/database.hpp"
#include "engine/restart_report.hpp"
#include "engine/storage_files.hpp"
#include "engine/table.hpp"
#include "ssd/ssd_crash_simulator.hpp"
#include "tests/engine_crash_test_support.hpp"
#include "tests/test_support.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/frame_pool.hpp"

namespace tristore {
namespace {

using namespace crash_test;

constexpr std::uint64_t kTransactions = 120;
constexpr std::uint64_t kCheckpointEvery = 40;  // besides the ones a filling log starts
constexpr std::uint64_t kCrashPoints = 50;      // times TRISTORE_SOAK_ITERATIONS
constexpr std::uint64_t kImagesPerCrash = 2;
constexpr std::uint64_t kMoreSsdCrashPoints = 40;  // at most, should none find a write in flight

// 8000 rows of 200 B (~150 leaves) over a dozen DRAM frames and (3tier) ~110 NVM slots.
Config tiered_config(Architecture arch, const std::string& nvm, const std::string& ssd,
                     bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 12 * FramePool::kSlabBytes;
  // 3tier: ~110 slots and 256 KiB of log. ssd-bm: the NVM file holds only the log, 2 MiB of
  // it, so checkpoints are rarer and dirty pages reach SSD between them.
  config.nvm_bytes = arch == Architecture::kThreeTier ? 2 * kMiB : 16 * kMiB;
  config.ssd_bytes = 8 * kMiB;
  config.nvm_path = nvm;
  config.ssd_path = ssd;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  // Also on reopen, where nothing crashes: simulated syncs skip the real fdatasync.
  config.nvm_crash_simulation = true;
  config.ssd_crash_simulation = true;
  return config;
}

struct Paths {
  // All on tmpfs, the SSD file and its images too, as their durability is simulated anyway
  // (O_DIRECT on this VM's disk costs 0.3 ms a page and made the test ten times slower).
  testing_support::TempDir dir{testing_support::kNvmBase, "tristore-tiered-crash"};
  std::string nvm = dir.file("db.nvm");
  std::string ssd() const { return dir.file("db.ssd"); }
  std::string nvm_image(std::uint64_t k) const {
    return dir.file("image" + std::to_string(k) + ".nvm");
  }
  std::string ssd_image(std::uint64_t k) const {
    return dir.file("image" + std::to_string(k) + ".ssd");
  }
};

struct Outcome {
  bool crashed = false;
  bool in_checkpoint = false;             // crashed in an explicit checkpoint between transactions
  std::uint64_t finished = 0;             // transactions that returned from commit or abort
  std::uint64_t fences = 0;               // fences of the transaction phase
  std::uint64_t unsynced_ssd_writes = 0;  // at the crash
  Counters counters;                      // of the transaction phase
};

// Loads, arms a crash at the n-th fence of the transaction phase (0: none), runs; after a
// crash writes kImagesPerCrash pairs of crash images.
// ssd_ops (reference run): the fence count at each SSD write or sync, for crash points just
// after them.
void run(Architecture arch, const Paths& paths, std::uint64_t seed, std::uint64_t crash_at,
         Outcome& outcome, std::vector<std::uint64_t>* ssd_ops = nullptr) {
  auto db = Database::open(tiered_config(arch, paths.nvm, paths.ssd(), true));
  auto table = db->create_table<std::uint64_t, Row>("rows");
  table.bulk_load(kLoadedKeys, [](std::size_t i, std::uint64_t& k, Row& row) {
    k = i * (kKeySpace / kLoadedKeys);
    row = make_row(k, 0);
  });
  CrashSimulator* nvm = db->nvm_crash_simulator();
  SsdCrashSimulator* ssd = db->ssd_crash_simulator();
  ASSERT_NE(nvm, nullptr);
  ASSERT_NE(ssd, nullptr);
  const std::uint64_t fences_before = nvm->fences();
  const Counters counters_before = db->counters();
  if (crash_at != 0) nvm->arm_crash_at_fence(crash_at);
  if (ssd_ops != nullptr)
    ssd->set_machine_down_check([=] {
      ssd_ops->push_back(nvm->fences() - fences_before);
      return false;
    });
  try {
    for (std::uint64_t i = 1; i <= kTransactions; ++i) {
      run_txn(*db, table, seed, i);
      outcome.finished = i;
      if (i % kCheckpointEvery == 0) {
        outcome.in_checkpoint = true;
        db->checkpoint();
        outcome.in_checkpoint = false;
      }
    }
  } catch (const SimulatedCrash&) {
    outcome.crashed = true;
  }
  outcome.fences = nvm->fences() - fences_before;
  outcome.counters = db->counters() - counters_before;
  if (!outcome.crashed) {
    nvm->disarm();
    return;
  }
  // The machine is down: a checkpoint now reaches neither NVM nor SSD.
  outcome.unsynced_ssd_writes = ssd->unsynced_writes();
  const std::uint64_t writes = ssd->writes(), syncs = ssd->syncs();
  try {
    db->checkpoint();
  } catch (const Error&) {
  }
  EXPECT_TRUE(ssd->frozen());
  EXPECT_EQ(ssd->writes(), writes) << "an SSD write after the crash counted";
  EXPECT_EQ(ssd->syncs(), syncs) << "an SSD sync after the crash counted";
  for (std::uint64_t k = 0; k < kImagesPerCrash; ++k) {
    nvm->write_crash_image(seed + crash_at * 16 + k, paths.nvm_image(k));
    ssd->write_crash_image(seed + crash_at * 16 + k, paths.ssd_image(k));
  }
  db->simulate_crash_on_close();
}

// Opens the files of a closed database without the engine: every occupied NVM slot header
// is intact, names a page no other slot holds, which the slot's bytes carry, which the page
// table maps to that tier and which has its SSD page; the catalog's tree validates and holds
// `expected`, every page of it readable (no torn SSD page survived), and the SSD pages in use are
// exactly its pages.
void check_files(Architecture arch, const std::string& nvm_path, const std::string& ssd_path,
                 const Model& expected) {
  const Config config = tiered_config(arch, nvm_path, ssd_path, false);
  std::unique_ptr<NvmTier> nvm =
      arch == Architecture::kThreeTier ? open_nvm_tier(config, false) : nullptr;
  std::unique_ptr<SsdPageFile> ssd = open_ssd_file(config, false);
  BufferManagerOptions options;
  options.dram_bytes = config.dram_bytes;
  options.nvm = nvm.get();
  options.ssd = ssd.get();
  options.swizzling = false;  // the catalog's root swip is a local copy
  BufferManager manager(options);
  if (nvm != nullptr) {
    std::set<PageId> in_nvm;
    for (SlotId slot = 0; slot < nvm->slot_count(); ++slot) {
      const NvmSlotHeader& header = nvm->header(slot);
      if (header.is_free()) continue;
      SCOPED_TRACE("NVM slot " + std::to_string(slot) + ", page " + std::to_string(header.page_id));
      EXPECT_TRUE(nvm->header_valid(slot));
      EXPECT_TRUE(in_nvm.insert(header.page_id).second) << "a second slot holds the page";
      PageHeader content;
      std::memcpy(&content, nvm->slot(slot), sizeof(content));
      EXPECT_EQ(content.page_id, header.page_id) << "the slot holds another page";
      EXPECT_EQ(manager.location(header.page_id), BufferManager::Location::kNvm);
      EXPECT_TRUE(ssd->is_allocated(header.page_id)) << "an NVM page without its SSD page";
    }
  }
  Catalog catalog = Catalog::load(ssd->metadata());
  CatalogEntry* entry = catalog.find("rows");
  ASSERT_NE(entry, nullptr);
  Swip root = entry->root;
  BTree<std::uint64_t, Row, BufferManager> tree(manager, root);
  EXPECT_EQ(tree.validate(), "");
  const BTreeStats stats = tree.stats();
  EXPECT_EQ(ssd->pages_in_use(), stats.inner_nodes + stats.leaves)
      << "SSD pages in use beside the tree's (a page of an operation the crash cut short)";
  Model rows;
  tree.scan(0, SIZE_MAX, [&](const std::uint64_t& k, const Row& row) {
    rows[k] = row;
    return true;
  });
  EXPECT_TRUE(same(rows, expected)) << describe_difference(expected, rows);
}

// At the crash already: a slot header names the page its slot holds (the page goes first,
// then its header), whatever the crash cut.
void check_crash_image_slots(Architecture arch, const std::string& nvm_image,
                             const std::string& ssd_image) {
  if (arch != Architecture::kThreeTier) return;
  std::unique_ptr<NvmTier> nvm =
      open_nvm_tier(tiered_config(arch, nvm_image, ssd_image, false), false);
  for (SlotId slot = 0; slot < nvm->slot_count(); ++slot) {
    const NvmSlotHeader& header = nvm->header(slot);
    if (header.is_free()) continue;
    PageHeader content;
    std::memcpy(&content, nvm->slot(slot), sizeof(content));
    EXPECT_EQ(content.page_id, header.page_id) << "crash image: NVM slot " << slot;
  }
}

// Reopens one pair of crash images and checks what survived; then one more transaction and
// a clean close, and the files on their own.
void check_recovery(Architecture arch, const std::string& nvm_image, const std::string& ssd_image,
                    std::uint64_t seed, std::uint64_t finished) {
  check_crash_image_slots(arch, nvm_image, ssd_image);
  Model expected;
  {
    auto db = Database::open(tiered_config(arch, nvm_image, ssd_image, false));
    EXPECT_TRUE(db->restart_report().performed);
    auto table = db->open_table<std::uint64_t, Row>("rows");
    const Model seen = scan_all(table);
    const Model committed = model_after(seed, finished);
    ASSERT_TRUE(same(seen, committed) || same(seen, model_after(seed, finished + 1)))
        << "after " << finished
        << " finished transactions: " << describe_difference(committed, seen);
    expected = seen;
    run_txn(*db, table, seed + 1, 1);
    const Txn txn = make_txn(seed + 1, 1);
    if (txn.commit)
      for (const Op& op : txn.ops) apply(expected, op, 1);
  }
  check_files(arch, nvm_image, ssd_image, expected);
}

void crash_at_many_fences(Architecture arch) {
  const std::uint64_t seed = base_seed();
  Paths paths;
  Outcome full;
  std::vector<std::uint64_t> ssd_ops;
  ASSERT_NO_FATAL_FAILURE(run(arch, paths, seed, 0, full, &ssd_ops));
  ASSERT_FALSE(full.crashed);
  const Counters& c = full.counters;
  std::printf(
      "%s, transaction phase: %llu fences, %llu DRAM evictions, %llu NVM admissions (%llu "
      "denied), %llu NVM evictions, %llu SSD pages written, %llu SSD syncs\n",
      std::string(architecture_name(arch)).c_str(), (unsigned long long)full.fences,
      (unsigned long long)c.dram_evictions, (unsigned long long)c.nvm_admissions,
      (unsigned long long)c.nvm_admissions_denied, (unsigned long long)c.nvm_evictions,
      (unsigned long long)c.ssd_pages_written, (unsigned long long)c.ssd_syncs);
  EXPECT_GT(c.dram_evictions, 0u);
  EXPECT_GT(c.ssd_pages_written, 0u);
  if (arch == Architecture::kThreeTier) {
    EXPECT_GT(c.nvm_admissions, 0u);
    EXPECT_GT(c.nvm_evictions, 0u) << "NVM must overflow to SSD during the run";
  }
  {  // The reference run's files: a clean close.
    Model expected = model_after(seed, kTransactions);
    check_files(arch, paths.nvm, paths.ssd(), expected);
  }

  // Crash points: spread over the whole run, and as many again at the first fences after SSD
  // writes and syncs (evictions to SSD, checkpoints), so that SSD writes are often in flight.
  const std::uint64_t points = kCrashPoints * crash_soak();
  const std::uint64_t step = std::max<std::uint64_t>(1, 2 * full.fences / points);
  std::mt19937_64 random(seed);
  std::set<std::uint64_t> crash_points;
  for (std::uint64_t first = 1; first <= full.fences; first += step)
    crash_points.insert(std::min(full.fences, first + random() % step));
  std::shuffle(ssd_ops.begin(), ssd_ops.end(), random);
  for (std::size_t i = 0; i < ssd_ops.size() && i < points / 2; ++i)
    crash_points.insert(std::min(full.fences, ssd_ops[i] + 1 + random() % 2));
  std::uint64_t crashes = 0, in_checkpoint = 0, with_unsynced_ssd_writes = 0;
  const auto crash_and_reopen = [&](std::uint64_t n) {
    SCOPED_TRACE("crash at fence " + std::to_string(n) + " (TRISTORE_SEED=" + std::to_string(seed) +
                 ")");
    Outcome outcome;
    ASSERT_NO_FATAL_FAILURE(run(arch, paths, seed, n, outcome));
    if (!outcome.crashed) return;
    ++crashes;
    in_checkpoint += outcome.in_checkpoint;
    with_unsynced_ssd_writes += outcome.unsynced_ssd_writes > 0;
    for (std::uint64_t k = 0; k < kImagesPerCrash; ++k) {
      SCOPED_TRACE("image " + std::to_string(k));
      try {
        ASSERT_NO_FATAL_FAILURE(
            check_recovery(arch, paths.nvm_image(k), paths.ssd_image(k), seed, outcome.finished));
      } catch (const std::exception& e) {
        FAIL() << "reopening the crash images threw: " << e.what();
      }
    }
  };
  for (const std::uint64_t n : crash_points) {
    crash_and_reopen(n);
    if (testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(crashes, crash_points.size());
  // The SSD writers run on threads of their own, so where a write is in flight moves with the
  // machine's load: on a busy machine the points after the reference run's writes may all
  // miss one. More points after its other writes, until one crash finds a write in flight.
  std::uint64_t more_points = 0;
  for (std::size_t i = points / 2;
       i < ssd_ops.size() && with_unsynced_ssd_writes == 0 && more_points < kMoreSsdCrashPoints;
       ++i, ++more_points) {
    crash_and_reopen(std::min(full.fences, ssd_ops[i] + 1 + random() % 2));
    if (testing::Test::HasFatalFailure()) return;
  }
  std::printf(
      "%llu crashes reopened (%llu images each): %llu in explicit checkpoints, %llu with "
      "unsynced SSD writes (%llu points added to find one)\n",
      (unsigned long long)crashes, (unsigned long long)kImagesPerCrash,
      (unsigned long long)in_checkpoint, (unsigned long long)with_unsynced_ssd_writes,
      (unsigned long long)more_points);
  EXPECT_GT(with_unsynced_ssd_writes, 0u) << "no crash found an SSD write in flight";
}

TEST(EngineTieredCrashSimulator, ThreeTierRecoversFromCrashAtAnyFence) {
  crash_at_many_fences(Architecture::kThreeTier);
}

TEST(EngineTieredCrashSimulator, SsdBmRecoversFromCrashAtAnyFence) {
  crash_at_many_fences(Architecture::kSsdBm);
}

}  // namespace
}  // namespace tristore
