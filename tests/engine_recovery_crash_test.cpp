// Power failures at every kind of moment: the NVM crash simulator cuts the run at the n-th
// fence (during commits, operations, checkpoints and evictions), a crash image keeps only
// what was flushed and fenced (other lines at random), and the database reopened from the
// image must hold every acknowledged commit, nothing aborted, and the transaction in flight
// whole or not at all, in a B-tree whose full scan is in key order. NVM-only architectures:
// the SSD file is no part of the simulation. Also: bad files and logs give clear Errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/error.hpp"
#include "emulation/crash_simulator.hpp"
#include "engine/database.hpp"
#include "engine/restart_report.hpp"
#include "engine/table.hpp"
#include "tests/engine_crash_test_support.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using namespace crash_test;

constexpr std::uint64_t kTransactions = 100;
constexpr std::size_t kRows = 2000;  // every other key of [0, 4000)

Config small_config(Architecture arch, const std::string& nvm_path, bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 256 * 1024;  // a dozen frames: pages are evicted during the run
  config.nvm_bytes = 3 * kMiB;     // 384 KiB of log: checkpoints during the run
  config.nvm_path = nvm_path;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  config.nvm_crash_simulation = create;
  return config;
}

void load(Table<std::uint64_t, Row>& table) {
  table.bulk_load(kRows, [](std::size_t i, std::uint64_t& k, Row& row) {
    k = i * 2;
    row = make_row(k, 0);
  });
}

Model loaded_small() {
  Model model;
  for (std::uint64_t k = 0; k < kRows * 2; k += 2) model[k] = make_row(k, 0);
  return model;
}

struct Outcome {
  bool crashed = false;
  std::uint64_t finished = 0;  // transactions that returned from commit or abort
  std::uint64_t fences = 0;    // fences of the transaction phase (without a crash)
};

// Loads, arms the crash at the n-th fence of the transaction phase (0: never), runs.
Outcome run(Architecture arch, const std::string& path, const std::string& image,
            std::uint64_t seed, std::uint64_t crash_at) {
  Outcome outcome;
  auto db = Database::open(small_config(arch, path, true));
  auto table = db->create_table<std::uint64_t, Row>("rows");
  load(table);
  CrashSimulator* crash = db->nvm_crash_simulator();
  const std::uint64_t fences_before = crash->fences();
  if (crash_at != 0) crash->arm_crash_at_fence(crash_at);
  try {
    for (std::uint64_t i = 1; i <= kTransactions; ++i) {
      run_txn(*db, table, seed, i);
      outcome.finished = i;
    }
  } catch (const SimulatedCrash&) {
    outcome.crashed = true;
  }
  outcome.fences = crash->fences() - fences_before;
  if (outcome.crashed) crash->write_crash_image(seed + crash_at, image);
  return outcome;
}

void crash_at_many_fences(Architecture arch) {
  const std::uint64_t seed = base_seed();
  const testing_support::TempDir dir(testing_support::kNvmBase, "tristore-recovery-crash");
  const std::string path = dir.file("db.nvm");
  const std::string image = dir.file("image.nvm");
  const Outcome full = run(arch, path, image, seed, 0);
  ASSERT_GT(full.fences, 10u);
  const std::uint64_t points = std::getenv("TRISTORE_SOAK_ITERATIONS") != nullptr ? 400 : 30;
  const std::uint64_t step = std::max<std::uint64_t>(1, full.fences / points);
  std::uint64_t crashes = 0;
  for (std::uint64_t n = 1; n <= full.fences; n += step) {
    SCOPED_TRACE("crash at fence " + std::to_string(n));
    const Outcome outcome = run(arch, path, image, seed, n);
    if (!outcome.crashed) continue;
    ++crashes;
    auto db = Database::open(small_config(arch, image, false));
    EXPECT_TRUE(db->restart_report().performed);
    auto table = db->open_table<std::uint64_t, Row>("rows");
    const Model seen = scan_all(table);
    EXPECT_TRUE(same(seen, model_after(seed, outcome.finished, loaded_small())) ||
                same(seen, model_after(seed, outcome.finished + 1, loaded_small())))
        << "after " << outcome.finished << " finished transactions: " << seen.size() << " rows";
    // The recovered database takes new transactions and survives a clean reopen.
    run_txn(*db, table, seed + 1, 1);
  }
  std::printf("%llu fences in the run, %llu crashes reopened\n",
              static_cast<unsigned long long>(full.fences),
              static_cast<unsigned long long>(crashes));
  EXPECT_GT(crashes, 10u);
}

TEST(EngineRecoveryCrash, BasicNvmRecoversFromCrashAtAnyFence) {
  crash_at_many_fences(Architecture::kBasicNvm);
}
TEST(EngineRecoveryCrash, NvmDirectRecoversFromCrashAtAnyFence) {
  crash_at_many_fences(Architecture::kNvmDirect);
}

TEST(EngineRecoveryCrash, ReopenWithAnotherArchitectureOrCorruptLogIsAnError) {
  const testing_support::TempDir dir(testing_support::kNvmBase, "tristore-recovery-bad");
  const std::string path = dir.file("db.nvm");
  {
    auto db = Database::open(small_config(Architecture::kNvmDirect, path, true));
    auto table = db->create_table<std::uint64_t, Row>("rows");
    load(table);
    table.update(4, make_row(4, 9));
  }
  // 1. The NVM file of nvm-direct opened as basic-nvm with a missing SSD file, and with
  //    other key or value types.
  EXPECT_THROW(Database::open(small_config(Architecture::kThreeTier, path, false)), Error);
  {
    auto db = Database::open(small_config(Architecture::kNvmDirect, path, false));
    EXPECT_THROW((db->open_table<std::uint32_t, Row>("rows")), Error);
  }
  // 2. Both log header copies overwritten: an Error, not a silent empty log.
  {
    std::FILE* file = std::fopen(path.c_str(), "r+b");
    ASSERT_NE(file, nullptr);
    std::fseek(file, 4096, SEEK_SET);
    const std::string garbage(256, 'x');
    std::fwrite(garbage.data(), 1, garbage.size(), file);
    std::fclose(file);
  }
  EXPECT_THROW(Database::open(small_config(Architecture::kNvmDirect, path, false)), Error);
}

}  // namespace
}  // namespace tristore
