// Checkpoints inside a long transaction whose live undo fills a good part of the smallest log,
// cut by the crash simulator at their last fences (where the log header names the checkpoint
// and frees the log before it), then restart cut again during its own undo. Every state must
// reopen, open its table and hold exactly what was committed: no sequence of crashes may leave
// the log so full that restart cannot finish its undo. All four durable architectures (3tier
// and ssd-bm with the SSD inside the simulation). Seeds printed; TRISTORE_SEED replays;
// TRISTORE_SOAK_ITERATIONS cuts more checkpoints at more fences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "emulation/crash_simulator.hpp"
#include "engine/database.hpp"
#include "engine/restart_report.hpp"
#include "engine/table.hpp"
#include "engine/transaction.hpp"
#include "ssd/ssd_crash_simulator.hpp"
#include "tests/engine_log_space_support.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using namespace log_space_test;

constexpr std::uint64_t kMarkerKey = 2 * kLoadedRows + 1;

int soak() { return testing_support::soak_iterations(); }

Model committed_before() {
  Model model = loaded_model();
  model[kMarkerKey] = make_row(kMarkerKey, 9);
  return model;
}

// Both files on tmpfs: their durability is simulated anyway, and O_DIRECT on this VM's disk
// would make each of the many runs slow.
using Files = testing_support::TmpfsDatabaseFiles;
constexpr const char* kFilesPrefix = "tristore-checkpoint-crash";

Config simulated_config(Architecture arch, const Files& files, bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 2 * kMiB;
  config.nvm_bytes = small_nvm_bytes(arch);
  config.ssd_bytes = 64 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  config.nvm_crash_simulation = true;
  config.ssd_crash_simulation = arch == Architecture::kThreeTier || arch == Architecture::kSsdBm;
  return config;
}

// Updates and removes keep 512-byte before-images live (about a fifth of the log in all);
// the inserts between loaded keys make the log wrap so that checkpoints run inside.
std::vector<Op> heavy_transaction(Architecture arch, std::uint64_t seed) {
  return long_transaction(seed, log_bytes(arch) / 1000, log_bytes(arch) / 9000);
}

// Writes the crash images of a crashed database: image_seed 0 keeps only what was fenced
// (NVM) and synced (SSD); others keep unfenced lines and unsynced writes at random.
void write_images(Database& db, const Files& out, std::uint64_t image_seed) {
  if (image_seed == 0)
    db.nvm_crash_simulator()->write_durable_image(out.nvm);
  else
    db.nvm_crash_simulator()->write_crash_image(image_seed, out.nvm);
  if (SsdCrashSimulator* ssd = db.ssd_crash_simulator(); ssd != nullptr)
    ssd->write_crash_image(image_seed == 0 ? 1 : image_seed, out.ssd);
  db.simulate_crash_on_close();
}

struct OpTrace {
  std::uint64_t fences_before;
  std::uint64_t fences_after;
  bool checkpointed;  // a checkpoint completed during the operation
};

// Loads, commits the marker, runs the long transaction; crash_at (fences into the
// transaction, 0: none) cuts it and writes images into out. Returns the trace of a whole run.
std::vector<OpTrace> run_long(Architecture arch, const Files& files, const std::vector<Op>& ops,
                              std::uint64_t crash_at, const Files* out, std::uint64_t image_seed) {
  auto db = Database::open(simulated_config(arch, files, true));
  auto table = db->create_table<std::uint64_t, Row>("rows");
  load(table);
  table.insert(kMarkerKey, make_row(kMarkerKey, 9));
  CrashSimulator* crash = db->nvm_crash_simulator();
  const std::uint64_t base = crash->fences();
  if (crash_at != 0) crash->arm_crash_at_fence(crash_at);
  std::vector<OpTrace> trace;
  try {
    Transaction txn = db->begin();
    for (const Op& op : ops) {
      const std::uint64_t checkpoints = db->counters().log_checkpoints;
      const std::uint64_t before = crash->fences() - base;
      EXPECT_TRUE(run(table, txn, op, 1));
      trace.push_back(
          {before, crash->fences() - base, db->counters().log_checkpoints != checkpoints});
    }
    txn.abort();
  } catch (const SimulatedCrash&) {
    write_images(*db, *out, image_seed);
    return trace;
  }
  EXPECT_EQ(crash_at, 0u) << "no crash at fence " << crash_at;
  crash->disarm();
  return trace;
}

// Reopens files; crash_at (fences into opening the table, which undoes the loser, 0: none)
// cuts restart and writes images into out. True if it crashed.
bool reopen(Architecture arch, const Files& files, std::uint64_t crash_at, const Files* out,
            std::uint64_t image_seed, std::uint64_t* fences = nullptr) {
  auto db = Database::open(simulated_config(arch, files, false));
  CrashSimulator* crash = db->nvm_crash_simulator();
  const std::uint64_t base = crash->fences();
  if (crash_at != 0) crash->arm_crash_at_fence(crash_at);
  try {
    auto table = db->open_table<std::uint64_t, Row>("rows");
    if (fences != nullptr) *fences = crash->fences() - base;
    crash->disarm();
    const Model seen = scan_all(table);
    EXPECT_TRUE(same(seen, committed_before())) << difference(committed_before(), seen);
    return false;
  } catch (const SimulatedCrash&) {
    write_images(*db, *out, image_seed);
    return true;
  }
}

void cut_checkpoints(Architecture arch) {
  const std::uint64_t seed = testing_support::test_seed();
  const std::vector<Op> ops = heavy_transaction(arch, seed);
  const Files files{kFilesPrefix};
  const std::vector<OpTrace> trace = run_long(arch, files, ops, 0, nullptr, 0);
  ASSERT_EQ(trace.size(), ops.size());

  // 1. The operations that ran the last checkpoints; each one's last fences.
  std::vector<std::uint64_t> points;
  const std::size_t checkpoints_cut = 2 * static_cast<std::size_t>(soak());
  const std::uint64_t fences_each = 3 * static_cast<std::uint64_t>(soak());
  for (auto it = trace.rbegin();
       it != trace.rend() && points.size() < checkpoints_cut * fences_each; ++it) {
    if (!it->checkpointed) continue;
    for (std::uint64_t f = it->fences_after;
         f > it->fences_before && f + fences_each > it->fences_after; --f)
      points.push_back(f);
  }
  ASSERT_GE(points.size(), 4u) << "no checkpoint ran inside the transaction";

  // 2. Cut there, reopen; then cut the restart's undo and reopen once more.
  std::uint64_t crashes = 0;
  const Files image{kFilesPrefix};
  const Files second{kFilesPrefix};
  for (const std::uint64_t point : points) {
    for (const std::uint64_t image_seed : {std::uint64_t{0}, seed + point}) {
      SCOPED_TRACE("crash at fence " + std::to_string(point) + ", image seed " +
                   std::to_string(image_seed));
      run_long(arch, files, ops, point, &image, image_seed);
      ++crashes;
      std::uint64_t restart_fences = 0;
      {
        const Files copy{kFilesPrefix};
        std::filesystem::copy_file(image.nvm, copy.nvm);
        if (std::filesystem::exists(image.ssd)) std::filesystem::copy_file(image.ssd, copy.ssd);
        ASSERT_FALSE(reopen(arch, copy, 0, nullptr, 0, &restart_fences));
      }
      if (restart_fences == 0) continue;
      const std::uint64_t cut = 1 + (seed + point) % restart_fences;
      SCOPED_TRACE("restart cut at fence " + std::to_string(cut) + " of " +
                   std::to_string(restart_fences));
      ASSERT_TRUE(reopen(arch, image, cut, &second, image_seed));
      ++crashes;
      ASSERT_FALSE(reopen(arch, second, 0, nullptr, 0));
    }
  }
  std::printf("%s: %zu operations, %llu crashes reopened\n", name(arch), ops.size(),
              static_cast<unsigned long long>(crashes));
}

TEST(EngineCheckpointCrash, ThreeTierNeverStrandsAfterACheckpointCutAtItsLastFences) {
  cut_checkpoints(Architecture::kThreeTier);
}
TEST(EngineCheckpointCrash, BasicNvmNeverStrandsAfterACheckpointCutAtItsLastFences) {
  cut_checkpoints(Architecture::kBasicNvm);
}
TEST(EngineCheckpointCrash, SsdBmNeverStrandsAfterACheckpointCutAtItsLastFences) {
  cut_checkpoints(Architecture::kSsdBm);
}
TEST(EngineCheckpointCrash, NvmDirectNeverStrandsAfterACheckpointCutAtItsLastFences) {
  cut_checkpoints(Architecture::kNvmDirect);
}

}  // namespace
}  // namespace tristore
