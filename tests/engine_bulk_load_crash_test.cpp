// Power failures amid a bulk load, which is not logged: the loaded tree grows in new pages
// below a new root, and the checkpoint whose catalog names that root makes the load durable.
// Whatever fence the crash cuts, the reopened database must hold the table empty or wholly
// loaded, the other table untouched, and (after a clean close, read without the engine) trees
// that validate over exactly the pages in use: no page of a load cut short kept, none of a
// finished one given back, the old root of a finished one freed (on SSD architectures, the
// load's pages are allocated and synced before its catalog: their claims give them back).
// Crash images keep what was fenced or synced and, at random, other words and SSD writes. Seeds are
// printed; TRISTORE_SEED replays; TRISTORE_SOAK_ITERATIONS=N tries N times more points.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "emulation/crash_simulator.hpp"
#include "engine/database.hpp"
#include "engine/table.hpp"
#include "ssd/ssd_crash_simulator.hpp"
#include "tests/architecture_test_name.hpp"
#include "tests/page_claims_test_support.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using namespace page_claims;

constexpr std::uint64_t kOtherRows = 100;
constexpr std::uint64_t kLoaded = 20000;     // ~760 pages, beyond the DRAM of the buffered ones
constexpr std::uint64_t kRandomPoints = 24;  // times TRISTORE_SOAK_ITERATIONS
constexpr std::uint64_t kLastPoints = 24;    // the load's end: its checkpoints

Config crash_config(Architecture arch, const std::string& nvm, const std::string& ssd,
                    bool create) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 2 * kMiB;
  // ~760 pages loaded: room for them in NVM where it is their home, else on SSD.
  config.nvm_bytes = has_ssd(arch) ? 4 * kMiB : 24 * kMiB;
  config.ssd_bytes = 32 * kMiB;
  config.nvm_path = nvm;
  config.ssd_path = ssd;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  config.checkpoint_interval_bytes = 64 * kMiB;  // only the load's own checkpoints
  config.nvm_crash_simulation = true;
  config.ssd_crash_simulation = has_ssd(arch);
  return config;
}

// Creates both tables, arms a crash at the n-th fence of the load (0: none) and loads; after a
// crash writes the images. Returns the fences the load took.
std::uint64_t load(Architecture arch, const testing_support::TempDir& dir, std::uint64_t seed,
                   std::uint64_t crash_at) {
  auto db = Database::open(crash_config(arch, dir.file("db.nvm"), dir.file("db.ssd"), true));
  Rows other = db->create_table<std::uint64_t, Row>("other");
  Rows rows = db->create_table<std::uint64_t, Row>("rows");
  // The other table grows, then shrinks after the checkpoint: merges free slots (logged) that
  // the load may take.
  for (std::uint64_t k = 0; k < 4 * kOtherRows; ++k) EXPECT_TRUE(other.insert(k, row(k)));
  db->checkpoint();
  for (std::uint64_t k = kOtherRows; k < 4 * kOtherRows; ++k) EXPECT_TRUE(other.remove(k));
  CrashSimulator& nvm = *db->nvm_crash_simulator();
  const std::uint64_t fences_before = nvm.fences();
  if (crash_at != 0) nvm.arm_crash_at_fence(crash_at);
  run_until_crash(nvm, [&] {
    rows.bulk_load(kLoaded, [](std::size_t n, std::uint64_t& key, Row& value) {
      key = n;
      value = row(n);
    });
  });
  const std::uint64_t fences = nvm.fences() - fences_before;
  if (!nvm.crashed()) {
    EXPECT_EQ(crash_at, 0u) << "the load ended before the crash point";
    nvm.disarm();
    return fences;
  }
  nvm.write_crash_image(seed + crash_at, dir.file("image.nvm"));
  if (SsdCrashSimulator* ssd = db->ssd_crash_simulator())
    ssd->write_crash_image(seed + crash_at, dir.file("image.ssd"));
  db->simulate_crash_on_close();
  return fences;
}

class BulkLoadCrash : public ::testing::TestWithParam<Architecture> {};

TEST_P(BulkLoadCrash, TheTableIsEmptyOrLoadedOverExactlyThePagesInUse) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  std::mt19937_64 random(seed);
  const testing_support::TempDir dir(testing_support::kNvmBase, "tristore-bulk-load-crash");
  const std::uint64_t fences = load(arch, dir, seed, 0);
  ASSERT_GT(fences, kLastPoints);
  // Random points, the first few, and the load's last fences (its checkpoints).
  std::set<std::uint64_t> points{1, 2, 3};
  for (std::uint64_t i = 0; i < kRandomPoints * testing_support::soak_iterations(); ++i)
    points.insert(1 + random() % fences);
  for (std::uint64_t f = fences - kLastPoints + 1; f <= fences; ++f) points.insert(f);
  std::uint64_t empty = 0, loaded = 0;
  for (const std::uint64_t crash_at : points) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", crash at fence " + std::to_string(crash_at) +
                 " of " + std::to_string(fences));
    load(arch, dir, seed, crash_at);
    if (::testing::Test::HasFailure()) return;
    const std::string nvm_image = dir.file("image.nvm"), ssd_image = dir.file("image.ssd");
    bool table_loaded = false;
    {
      auto db = Database::open(crash_config(arch, nvm_image, ssd_image, false));
      Rows other = db->open_table<std::uint64_t, Row>("other");
      EXPECT_EQ(keys_of(other).size(), kOtherRows) << "the other table changed";
      Rows rows = db->open_table<std::uint64_t, Row>("rows");
      const std::set<std::uint64_t> keys = keys_of(rows);
      table_loaded = !keys.empty();
      ASSERT_TRUE(keys.empty() || (keys.size() == kLoaded && *keys.rbegin() == kLoaded - 1))
          << keys.size() << " rows: the load is neither undone nor whole";
      (table_loaded ? loaded : empty) += 1;
    }
    const Pages pages =
        pages_of_files(crash_config(arch, nvm_image, ssd_image, false), {"other", "rows"});
    if (::testing::Test::HasFailure()) return;
    EXPECT_EQ(pages.in_use, pages.in_trees) << "pages in use beside those of the trees";
  }
  std::printf("%zu crash points of %llu fences: %llu left the table empty, %llu loaded\n",
              points.size(), static_cast<unsigned long long>(fences),
              static_cast<unsigned long long>(empty), static_cast<unsigned long long>(loaded));
  EXPECT_GT(empty, 0u);
  EXPECT_GT(loaded, 0u);
}

INSTANTIATE_TEST_SUITE_P(Durable, BulkLoadCrash,
                         ::testing::Values(Architecture::kThreeTier, Architecture::kSsdBm,
                                           Architecture::kNvmDirect, Architecture::kBasicNvm),
                         testing_support::ArchitectureTestName{});

}  // namespace
}  // namespace tristore
