// Power failures amid splits on the architectures with an SSD (3tier, ssd-bm): a split takes
// an SSD page before its record is in the log, and a sync that an eviction needs meanwhile
// (the double-write area fills) makes that allocation durable, the page's claim with it. One
// transaction inserts rows in random order over a DRAM pool of a dozen frames, its records made
// durable only as evictions need them; the crash comes at a random fence of it, or after its
// last insert, before its commit. After restart the table holds the rows from before the
// transaction, and (after a clean close, read without the engine) its tree validates over
// exactly the SSD pages in use: no page of a split whose record was lost is kept. Crash images
// keep what was fenced or synced and, at random, other words and SSD writes. Seeds are
// printed; TRISTORE_SEED replays; TRISTORE_SOAK_ITERATIONS=N tries N times more points.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "emulation/crash_simulator.hpp"
#include "engine/database.hpp"
#include "engine/restart_report.hpp"
#include "engine/table.hpp"
#include "engine/transaction.hpp"
#include "ssd/ssd_crash_simulator.hpp"
#include "tests/architecture_test_name.hpp"
#include "tests/page_claims_test_support.hpp"
#include "tests/test_support.hpp"
#include "tiers/frame_pool.hpp"

namespace tristore {
namespace {

using namespace page_claims;

constexpr std::uint64_t kBase = 200;        // rows committed before (every 4th key)
constexpr std::uint64_t kInserted = 1500;   // then inserted by the transaction the crash cuts
constexpr std::uint64_t kRandomPoints = 6;  // times TRISTORE_SOAK_ITERATIONS, besides the end

Config crash_config(Architecture arch, const std::string& nvm, const std::string& ssd,
                    bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 12 * FramePool::kSlabBytes;
  // 3tier: a few dozen slots beside the log. ssd-bm: the NVM file holds only the log.
  config.nvm_bytes = arch == Architecture::kThreeTier ? 4 * kMiB : 16 * kMiB;
  config.ssd_bytes = 16 * kMiB;
  config.nvm_path = nvm;
  config.ssd_path = ssd;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  config.checkpoint_interval_bytes = 64 * kMiB;  // none amid the transaction
  config.nvm_crash_simulation = true;
  config.ssd_crash_simulation = true;
  return config;
}

struct RunResult {
  std::uint64_t fences = 0;     // of the transaction
  std::uint64_t ssd_syncs = 0;  // of the transaction
};

// Commits the base rows, checkpoints, then inserts the rest in one transaction, armed to
// crash at its n-th fence (0: after its last insert). Writes the crash images.
RunResult run(Architecture arch, const testing_support::TempDir& dir, std::uint64_t seed,
              std::uint64_t crash_at) {
  auto db = Database::open(crash_config(arch, dir.file("db.nvm"), dir.file("db.ssd"), true));
  Rows rows = db->create_table<std::uint64_t, Row>("rows");
  for (std::uint64_t k = 0; k < kBase; ++k) EXPECT_TRUE(rows.insert(4 * k, row(4 * k)));
  db->checkpoint();
  std::vector<std::uint64_t> keys(kInserted);
  std::iota(keys.begin(), keys.end(), std::uint64_t{0});
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(seed));
  CrashSimulator& nvm = *db->nvm_crash_simulator();
  SsdCrashSimulator& ssd = *db->ssd_crash_simulator();
  const std::uint64_t fences_before = nvm.fences(), syncs_before = ssd.syncs();
  if (crash_at != 0) nvm.arm_crash_at_fence(crash_at);
  Transaction txn = db->begin();
  run_until_crash(nvm, [&] {
    for (const std::uint64_t n : keys) {
      // Half amid the base rows and past them, half far past them (the rightmost leaves).
      const std::uint64_t key = n % 2 == 0 ? 4 * (n / 2) + 1 : 1'000'000 + n;
      EXPECT_TRUE(rows.insert(txn, key, row(key)));
    }
  });
  const RunResult result{nvm.fences() - fences_before, ssd.syncs() - syncs_before};
  EXPECT_TRUE(crash_at == 0 || nvm.crashed()) << "the transaction ended before the crash point";
  nvm.write_crash_image(seed + crash_at, dir.file("image.nvm"));
  ssd.write_crash_image(seed + crash_at, dir.file("image.ssd"));
  db->simulate_crash_on_close();
  return result;
}

class SplitClaimsCrash : public ::testing::TestWithParam<Architecture> {};

TEST_P(SplitClaimsCrash, OnlyTheTreesPagesStayInUse) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  std::mt19937_64 random(seed);
  const testing_support::TempDir dir(testing_support::kNvmBase, "tristore-split-claims-crash");
  const RunResult whole = run(arch, dir, seed, 0);
  ASSERT_GT(whole.ssd_syncs, 0u) << "no SSD sync amid the transaction: nothing is tested";
  std::set<std::uint64_t> points{0};
  for (std::uint64_t i = 0; i < kRandomPoints * testing_support::soak_iterations(); ++i)
    points.insert(1 + random() % whole.fences);
  std::set<std::uint64_t> base_keys;
  for (std::uint64_t k = 0; k < kBase; ++k) base_keys.insert(4 * k);
  for (const std::uint64_t crash_at : points) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", crash at fence " + std::to_string(crash_at) +
                 " of " + std::to_string(whole.fences) + " (0: after the last insert)");
    if (crash_at != 0) run(arch, dir, seed, crash_at);
    if (::testing::Test::HasFailure()) return;
    const std::string nvm_image = dir.file("image.nvm"), ssd_image = dir.file("image.ssd");
    {
      auto db = Database::open(crash_config(arch, nvm_image, ssd_image, false));
      EXPECT_TRUE(db->restart_report().performed);
      Rows rows = db->open_table<std::uint64_t, Row>("rows");
      EXPECT_EQ(keys_of(rows), base_keys) << "the transaction in flight is not undone";
    }
    const Pages pages = pages_of_files(crash_config(arch, nvm_image, ssd_image, false), {"rows"});
    EXPECT_EQ(pages.in_use, pages.in_trees) << "SSD pages in use beside those of the tree";
  }
  std::printf("%zu crash points of %llu fences, %llu SSD syncs amid the transaction\n",
              points.size(), static_cast<unsigned long long>(whole.fences),
              static_cast<unsigned long long>(whole.ssd_syncs));
}

INSTANTIATE_TEST_SUITE_P(Tiered, SplitClaimsCrash,
                         ::testing::Values(Architecture::kThreeTier, Architecture::kSsdBm),
                         testing_support::ArchitectureTestName{});

}  // namespace
}  // namespace tristore
