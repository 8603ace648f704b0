// Torn in-place writes: redo replays tuple-level changes, which need each page exactly as some
// LSN left it, and no full-page image is logged any more. A checkpoint writes every dirty page
// back in place (NVM lines to their slot, pages to SSD); the crash simulator cuts it at each of
// its fences, a crash image keeps what was fenced and every other line at random, and SSD
// writes not synced whole, not at all or torn by sector (torn pages either way),
// and the reopened database must mend the torn pages from the double-write area and hold
// exactly the committed rows. The sweep must mend pages (a staged write was in flight) or the
// test shows nothing. Seeds are printed; TRISTORE_SEED replays; TRISTORE_SOAK_ITERATIONS=N
// takes N random images per crash point instead of 2.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "emulation/crash_simulator.hpp"
#include "engine/database.hpp"
#include "engine/restart_report.hpp"
#include "engine/table.hpp"
#include "ssd/ssd_crash_simulator.hpp"
#include "tests/engine_crash_test_support.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using namespace crash_test;

constexpr std::uint64_t kTransactions = 40;
constexpr std::size_t kRows = 2000;  // every other key of [0, 4000)

struct Files {
  testing_support::DatabaseFiles db{"tristore-torn-write"};
  std::string nvm_image = db.nvm_dir.file("image.nvm");
  std::string ssd_image = db.ssd_dir.file("image.ssd");
};

Config config_for(Architecture arch, const std::string& nvm, const std::string& ssd, bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 1 * kMiB;  // most pages stay dirty in DRAM until the checkpoint
  config.nvm_bytes = 4 * kMiB;
  config.ssd_bytes = 16 * kMiB;
  config.nvm_path = nvm;
  config.ssd_path = ssd;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  config.nvm_crash_simulation = create;
  config.ssd_crash_simulation = create && arch != Architecture::kBasicNvm;
  return config;
}

Model loaded_rows() {
  Model model;
  for (std::uint64_t k = 0; k < kRows * 2; k += 2) model[k] = make_row(k, 0);
  return model;
}

// Loads, runs the transactions, then checkpoints with a crash armed at its n-th fence (0:
// none). Returns the checkpoint's fences (n = 0) or whether it crashed.
std::uint64_t run(Architecture arch, const Files& files, std::uint64_t seed, std::uint64_t n,
                  std::uint64_t image_seed) {
  auto db = Database::open(config_for(arch, files.db.nvm, files.db.ssd, true));
  auto table = db->create_table<std::uint64_t, Row>("rows");
  table.bulk_load(kRows, [](std::size_t i, std::uint64_t& k, Row& row) {
    k = i * 2;
    row = make_row(k, 0);
  });
  for (std::uint64_t i = 1; i <= kTransactions; ++i) run_txn(*db, table, seed, i);
  CrashSimulator* crash = db->nvm_crash_simulator();
  const std::uint64_t before = crash->fences();
  if (n != 0) crash->arm_crash_at_fence(n);
  try {
    db->checkpoint();
  } catch (const SimulatedCrash&) {
    crash->write_crash_image(image_seed, files.nvm_image);
    // SSD writes not synced yet reach the image whole, not at all, or torn by 4 KiB sector.
    if (arch != Architecture::kBasicNvm)
      db->ssd_crash_simulator()->write_crash_image(image_seed, files.ssd_image);
    db->simulate_crash_on_close();
    return 1;
  }
  return n == 0 ? crash->fences() - before : 0;
}

void crash_in_every_write_back(Architecture arch) {
  const std::uint64_t seed = testing_support::test_seed();
  const Files files;
  const std::uint64_t fences = run(arch, files, seed, 0, 0);
  ASSERT_GT(fences, 4u);
  const Model expected = model_after(seed, kTransactions, loaded_rows());
  const std::uint64_t images = crash_soak() * 2;
  std::uint64_t crashes = 0, mended = 0;
  for (std::uint64_t n = 1; n <= fences; ++n) {
    for (std::uint64_t k = 0; k < images; ++k) {
      SCOPED_TRACE("crash at fence " + std::to_string(n) + " of the checkpoint, image " +
                   std::to_string(k));
      if (run(arch, files, seed, n, seed + 7919 * n + k) == 0) continue;
      ++crashes;
      auto db = Database::open(config_for(arch, files.nvm_image, files.ssd_image, false));
      mended += db->restart_report().torn_pages_mended;
      auto table = db->open_table<std::uint64_t, Row>("rows");
      const Model seen = scan_all(table);
      ASSERT_TRUE(same(seen, expected)) << describe_difference(expected, seen);
    }
  }
  std::printf("%s: %llu crashes in a checkpoint of %llu fences, %llu torn pages mended\n",
              std::string(architecture_name(arch)).c_str(), (unsigned long long)crashes,
              (unsigned long long)fences, (unsigned long long)mended);
  EXPECT_GT(crashes, 0u);
  EXPECT_GT(mended, 0u) << "no crash hit a staged write in flight";
}

TEST(EngineTornWriteCrash, BasicNvmMendsTornLineWriteBacks) {
  crash_in_every_write_back(Architecture::kBasicNvm);
}
TEST(EngineTornWriteCrash, ThreeTierMendsTornLineWriteBacks) {
  crash_in_every_write_back(Architecture::kThreeTier);
}
TEST(EngineTornWriteCrash, SsdBmMendsTornPageWrites) {
  crash_in_every_write_back(Architecture::kSsdBm);
}

}  // namespace
}  // namespace tristore
