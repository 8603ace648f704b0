// Power failures amid the operations that make and free pages, on the architectures whose NVM
// slot header is a page's claim (nvm-direct, basic-nvm): a slot is claimed for a new page
// before the operation's record is durable, and freed after the record of a merge is. A crash
// between the two must leave no slot to a page in no tree: after restart, the slots in use are
// exactly the pages of the table's tree, which holds the rows of a step before the crash. One
// thread inserts rows in ascending order (rightmost leaves split), then removes them again (leaves
// merge); a run without a crash records the slots in use after each step and the fences each step
// took, and the crash points are every fence of the steps that made or freed a page, plus random
// others. Crash images keep what was fenced and, at random, each other 8-byte word written since.
// Seeds are printed; TRISTORE_SEED replays; TRISTORE_SOAK_ITERATIONS=N tries N times more
// random points.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/page_format.hpp"
#include "emulation/crash_simulator.hpp"
#include "engine/database.hpp"
#include "engine/restart_report.hpp"
#include "engine/table.hpp"
#include "tests/architecture_test_name.hpp"
#include "tests/page_claims_test_support.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using namespace page_claims;

constexpr std::uint64_t kBase = 40;       // rows before the checkpoint
constexpr std::uint64_t kInserted = 200;  // then inserted one by one, then removed
constexpr std::uint64_t kSteps = 2 * kInserted;
constexpr std::uint64_t kRandomPoints = 8;  // times TRISTORE_SOAK_ITERATIONS
constexpr std::uint64_t kImagesPerCrash = 2;

Config crash_config(Architecture arch, const std::string& nvm, bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 4 * kMiB;
  config.nvm_bytes = 8 * kMiB;
  config.nvm_path = nvm;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  config.checkpoint_interval_bytes = 64 * kMiB;  // none during the steps
  config.nvm_crash_simulation = true;
  return config;
}

// Step s < kInserted inserts key kBase + s; step kInserted + j removes key kBase + j.
void take_step(Rows& rows, std::uint64_t step) {
  if (step < kInserted) {
    ASSERT_TRUE(rows.insert(kBase + step, row(kBase + step)));
  } else {
    ASSERT_TRUE(rows.remove(kBase + step - kInserted));
  }
}

struct StepsRun {
  bool crashed = false;
  std::vector<std::uint64_t> slots_after;  // slots in use after step s - 1 (index 0: none yet)
  std::vector<std::uint64_t> fence_after;  // fences taken by then
};

std::uint64_t slots_in_use(const Database& db) { return db.memory_usage().nvm_bytes / kPageSize; }

// Loads the base rows, checkpoints, arms a crash at the n-th fence of the steps (0: none) and
// takes the steps; after a crash writes the images.
StepsRun run(Architecture arch, const testing_support::TempDir& dir, std::uint64_t seed,
             std::uint64_t crash_at) {
  StepsRun result;
  auto db = Database::open(crash_config(arch, dir.file("db.nvm"), true));
  Rows rows = db->create_table<std::uint64_t, Row>("rows");
  for (std::uint64_t k = 0; k < kBase; ++k) EXPECT_TRUE(rows.insert(k, row(k)));
  db->checkpoint();
  CrashSimulator& nvm = *db->nvm_crash_simulator();
  const std::uint64_t fences_before = nvm.fences();
  if (crash_at != 0) nvm.arm_crash_at_fence(crash_at);
  result.slots_after.push_back(slots_in_use(*db));
  result.fence_after.push_back(0);
  result.crashed = run_until_crash(nvm, [&] {
    for (std::uint64_t step = 0; step < kSteps && !nvm.crashed(); ++step) {
      take_step(rows, step);
      if (::testing::Test::HasFatalFailure()) return;
      result.slots_after.push_back(slots_in_use(*db));
      result.fence_after.push_back(nvm.fences() - fences_before);
    }
  });
  if (::testing::Test::HasFatalFailure()) return result;
  if (!result.crashed) {
    nvm.disarm();
    return result;
  }
  for (std::uint64_t k = 0; k < kImagesPerCrash; ++k)
    nvm.write_crash_image(seed + crash_at * 16 + k, dir.file("image" + std::to_string(k)));
  db->simulate_crash_on_close();
  return result;
}

// The keys present after step s - 1 (s = 0: none taken).
std::set<std::uint64_t> keys_after(std::uint64_t steps) {
  std::set<std::uint64_t> keys;
  for (std::uint64_t k = 0; k < kBase + std::min(steps, kInserted); ++k) keys.insert(k);
  for (std::uint64_t j = 0; steps > kInserted && j < steps - kInserted; ++j) keys.erase(kBase + j);
  return keys;
}

class AllocationCrash : public ::testing::TestWithParam<Architecture> {};

TEST_P(AllocationCrash, NoSlotOutlivesItsPageAndNoneIsTakenFromTheTree) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  std::mt19937_64 random(seed);
  const testing_support::TempDir dir(testing_support::kNvmBase, "tristore-allocation-crash");
  const StepsRun whole = run(arch, dir, seed, 0);
  ASSERT_EQ(whole.slots_after.size(), kSteps + 1);
  // 1. Every fence of each step that made or freed a page, and random ones.
  std::set<std::uint64_t> points;
  std::uint64_t steps_making = 0, steps_freeing = 0;
  for (std::uint64_t s = 0; s < kSteps; ++s) {
    if (whole.slots_after[s + 1] == whole.slots_after[s]) continue;
    (whole.slots_after[s + 1] > whole.slots_after[s] ? steps_making : steps_freeing) += 1;
    for (std::uint64_t f = whole.fence_after[s] + 1; f <= whole.fence_after[s + 1]; ++f)
      points.insert(f);
  }
  ASSERT_GT(steps_making, 0u) << "no step split a leaf";
  ASSERT_GT(steps_freeing, 0u) << "no step merged leaves";
  const std::uint64_t fences = whole.fence_after.back();
  for (std::uint64_t i = 0; i < kRandomPoints * testing_support::soak_iterations(); ++i)
    points.insert(1 + random() % fences);
  // 2. Crash at each, reopen each image: the rows are those of some step, and the slots in use
  //    are the pages of the tree after that step.
  std::uint64_t given_back = 0;
  for (const std::uint64_t crash_at : points) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", crash at fence " + std::to_string(crash_at));
    const StepsRun cut = run(arch, dir, seed, crash_at);
    if (::testing::Test::HasFailure()) return;
    ASSERT_TRUE(cut.crashed);
    for (std::uint64_t k = 0; k < kImagesPerCrash; ++k) {
      SCOPED_TRACE("image " + std::to_string(k));
      auto db = Database::open(crash_config(arch, dir.file("image" + std::to_string(k)), false));
      given_back += db->restart_report().pages_given_back;
      Rows rows = db->open_table<std::uint64_t, Row>("rows");
      const std::set<std::uint64_t> keys = keys_of(rows);
      // The crash cut the run within the step after the last one done; a step whose record
      // was not yet durable is lost whole.
      std::uint64_t steps = cut.slots_after.size();
      while (steps > 0 && keys != keys_after(steps)) --steps;
      ASSERT_EQ(keys, keys_after(steps)) << "the rows are those of no step before the crash";
      db.reset();  // a clean close, then the file read without the engine
      const Pages pages = pages_of_files(
          crash_config(arch, dir.file("image" + std::to_string(k)), false), {"rows"});
      EXPECT_EQ(pages.in_use, pages.in_trees) << "the slots in use are not the tree's pages";
    }
  }
  // Some crash fell between a claim and its record, or a record and its free.
  EXPECT_GT(given_back, 0u);
  std::printf("%zu crash points, %llu pages given back at restart\n", points.size(),
              static_cast<unsigned long long>(given_back));
}

// A table created after merges freed slots (logged, no checkpoint since) may take one of them
// for its root; a crash at any fence of the creation leaves the table absent or empty, and
// the other table and the slots in use as they should be.
TEST_P(AllocationCrash, ATableCreatedAmidFreedSlotsIsWholeOrAbsent) {
  const Architecture arch = GetParam();
  const testing_support::TempDir dir(testing_support::kNvmBase, "tristore-allocation-crash");
  std::uint64_t fences = 0, created = 0, absent = 0;
  for (std::uint64_t crash_at = 0; crash_at == 0 || crash_at <= fences; ++crash_at) {
    SCOPED_TRACE("crash at fence " + std::to_string(crash_at));
    {
      auto db = Database::open(crash_config(arch, dir.file("db.nvm"), true));
      Rows rows = db->create_table<std::uint64_t, Row>("rows");
      for (std::uint64_t k = 0; k < 4 * kBase; ++k) ASSERT_TRUE(rows.insert(k, row(k)));
      db->checkpoint();
      for (std::uint64_t k = kBase; k < 4 * kBase; ++k) ASSERT_TRUE(rows.remove(k));
      CrashSimulator& nvm = *db->nvm_crash_simulator();
      const std::uint64_t before = nvm.fences();
      if (crash_at != 0) nvm.arm_crash_at_fence(crash_at);
      run_until_crash(nvm, [&] { db->create_table<std::uint64_t, Row>("late"); });
      if (crash_at == 0) {
        fences = nvm.fences() - before;
        ASSERT_GT(fences, 0u);
        continue;
      }
      ASSERT_TRUE(nvm.crashed());
      nvm.write_crash_image(crash_at, dir.file("image"));
      db->simulate_crash_on_close();
    }
    bool late_exists = false;
    {
      auto db = Database::open(crash_config(arch, dir.file("image"), false));
      Rows rows = db->open_table<std::uint64_t, Row>("rows");
      EXPECT_EQ(keys_of(rows).size(), kBase);
      try {
        Rows late = db->open_table<std::uint64_t, Row>("late");
        late_exists = true;
        EXPECT_TRUE(keys_of(late).empty());
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no table named"), std::string::npos) << e.what();
      }
      (late_exists ? created : absent) += 1;
    }
    const Pages pages =
        pages_of_files(crash_config(arch, dir.file("image"), false),
                       late_exists ? std::initializer_list<const char*>{"rows", "late"}
                                   : std::initializer_list<const char*>{"rows"});
    EXPECT_EQ(pages.in_use, pages.in_trees) << "the slots in use are not the trees' pages";
  }
  EXPECT_GT(created, 0u);
  EXPECT_GT(absent, 0u);
}

INSTANTIATE_TEST_SUITE_P(SlotsClaimPages, AllocationCrash,
                         ::testing::Values(Architecture::kNvmDirect, Architecture::kBasicNvm),
                         testing_support::ArchitectureTestName{});

}  // namespace
}  // namespace tristore
