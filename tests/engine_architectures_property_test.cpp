// The same seeded random operation sequences against every architecture and std::map, with
// pools small enough that 3tier keeps pages in all three tiers; durable architectures are
// closed and reopened half-way. TRISTORE_SEED=N replays a run.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "engine/database.hpp"
#include "engine/table.hpp"
#include "tests/model_comparison.hpp"
#include "tests/test_support.hpp"

using namespace tristore;
using testing_support::DatabaseFiles;
using testing_support::ModelComparison;
using testing_support::test_seed;

namespace {

using Value = std::array<char, 100>;

Value value_for(std::uint64_t key, std::uint64_t version) {
  Value v;
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>(key * 13 + version * 7 + i);
  return v;
}

struct ArchSetup {
  const char* name;
  Architecture architecture;
  bool cache_line_grained = true;
  bool mini_pages = true;
  bool swizzling = true;
};

const ArchSetup kSetups[] = {
    {"main-memory", Architecture::kMainMemory},
    {"nvm-direct", Architecture::kNvmDirect},
    {"basic-nvm", Architecture::kBasicNvm},
    {"ssd-bm", Architecture::kSsdBm},
    {"3tier", Architecture::kThreeTier},
    {"3tier-no-cl-grained", Architecture::kThreeTier, false, true, true},
    {"3tier-no-mini-pages", Architecture::kThreeTier, true, false, true},
    {"3tier-no-swizzling", Architecture::kThreeTier, true, true, false},
};

Config config_for(const ArchSetup& setup, const DatabaseFiles& files) {
  Config config;
  config.architecture = setup.architecture;
  config.dram_bytes = 1 * kMiB;
  config.nvm_bytes = 2 * kMiB;
  if (setup.architecture == Architecture::kNvmDirect ||
      setup.architecture == Architecture::kBasicNvm)
    config.nvm_bytes = 16 * kMiB;  // NVM holds every page there
  if (setup.architecture == Architecture::kMainMemory) config.dram_bytes = 64 * kMiB;
  config.ssd_bytes = 64 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  config.cache_line_grained = setup.cache_line_grained;
  config.mini_pages = setup.mini_pages;
  config.swizzling = setup.swizzling;
  return config;
}

bool durable(Architecture arch) { return arch != Architecture::kMainMemory; }

using Check = ModelComparison<Table<std::uint64_t, Value>, std::uint64_t, Value>;

// One random operation on table and model; every result must agree.
void random_operation(Check& check, std::mt19937_64& rng, std::uint64_t key_range,
                      std::uint64_t op) {
  check.op = op;
  const std::uint64_t k = rng() % key_range;
  switch (rng() % 12) {
    case 0:
    case 1:
      check.insert(k, value_for(k, op));
      break;
    case 2:
    case 3:
      check.remove(k);
      break;
    case 4:
      check.update(k, value_for(k, op));
      break;
    case 5: {
      const std::size_t offset = rng() % 90, length = 1 + rng() % 10;
      char bytes[10];
      std::memset(bytes, static_cast<int>(op), sizeof(bytes));
      check.update_part(k, offset, length, bytes);
      break;
    }
    case 6: {
      const std::size_t offset = rng() % 90, length = 1 + rng() % 10;
      check.lookup_part(k, offset, length);
      break;
    }
    case 7:
      check.scan(k, rng() % 50);
      break;
    default:
      check.lookup(k);
  }
}

class EngineArchitectures : public ::testing::TestWithParam<ArchSetup> {};

}  // namespace

TEST_P(EngineArchitectures, RandomOperationsMatchStdMapAcrossReopen) {
  const ArchSetup& setup = GetParam();
  const std::uint64_t seed = test_seed();
  DatabaseFiles files("tristore-arch-test");
  Config config = config_for(setup, files);
  std::mt19937_64 rng(seed);
  const std::uint64_t key_range = 40000;
  const std::uint64_t loaded = 20000;  // about 3 MiB of leaves: more than DRAM + NVM for 3tier

  auto db = Database::open(config);
  auto table = db->create_table<std::uint64_t, Value>("t");
  Check check(table);
  table.bulk_load(loaded, [&](std::size_t i, std::uint64_t& k, Value& v) {
    k = 2 * i;
    v = value_for(k, 0);
    check.record(k, v);
  });
  for (std::uint64_t op = 1; op <= 6000; ++op) {
    random_operation(check, rng, key_range, op);
    if (HasFatalFailure()) return;
  }
  if (durable(setup.architecture)) {
    db.reset();
    config.open_mode = OpenMode::kOpenExisting;
    db = Database::open(config);
    table = db->open_table<std::uint64_t, Value>("t");
    check.scan_all();
    if (HasFatalFailure()) return;
  }
  for (std::uint64_t op = 6001; op <= 12000; ++op) {
    random_operation(check, rng, key_range, op);
    if (HasFatalFailure()) return;
  }
  // Mostly deletes: merges everywhere in the tree.
  for (std::uint64_t k = 0; k < key_range; ++k) {
    if (k % 10 == 0) continue;
    check.remove(k);
    if (HasFatalFailure()) return;
  }
  check.scan_all();

  if (setup.architecture == Architecture::kThreeTier) {
    Counters c = db->counters();
    EXPECT_GT(c.nvm_lines_read, 0u);
    EXPECT_GT(c.nvm_admissions, 0u);
    EXPECT_GT(c.ssd_pages_read, 0u) << "the pool is too large to reach the SSD";
    EXPECT_GT(c.ssd_pages_written, 0u);
    EXPECT_GT(c.dram_evictions, 0u);
    if (setup.swizzling) {
      EXPECT_GT(c.swizzled_hits, 0u);
    }
    if (setup.mini_pages && setup.cache_line_grained) {
      EXPECT_GT(c.mini_pages_created, 0u);
    }
  }
  MemoryUsage usage = db->memory_usage();
  EXPECT_LE(usage.dram_bytes, usage.dram_limit_bytes);
}

INSTANTIATE_TEST_SUITE_P(All, EngineArchitectures, ::testing::ValuesIn(kSetups),
                         [](const ::testing::TestParamInfo<ArchSetup>& info) {
                           std::string name = info.param.name;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// A leaf that lives in NVM but not in DRAM: a lookup loads only the lines it needs.
TEST(EngineArchitecturesCounters, ColdNvmLeafLookupLoadsFewLines) {
  DatabaseFiles files("tristore-arch-test");
  Config config;
  config.architecture = Architecture::kThreeTier;
  config.dram_bytes = 1 * kMiB;
  config.nvm_bytes = 32 * kMiB;  // every page evicted from DRAM finds a free NVM slot
  config.ssd_bytes = 64 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  auto db = Database::open(config);
  auto table = db->create_table<std::uint64_t, std::uint64_t>("t");
  table.bulk_load(300000, [](std::size_t i, std::uint64_t& k, std::uint64_t& v) { k = v = i; });
  // Leaves hold 670 keys (the first 288 of them); the first leaves left DRAM first and are
  // cold, in NVM. The inner nodes may be cold too (a checkpoint writes every page down), so
  // lookups in the odd leaves first bring back every root line that lookups in the even
  // leaves need; then a lookup in an even leaf loads lines of that leaf only.
  constexpr std::uint64_t kPerLeaf = 670;
  std::uint64_t v = 0;
  for (std::uint64_t leaf = 1; leaf < 64; leaf += 2)
    ASSERT_TRUE(table.get(leaf * kPerLeaf + 300, v));
  std::size_t checked = 0;
  for (std::uint64_t leaf = 0; leaf < 40; leaf += 2) {
    const std::uint64_t k = leaf * kPerLeaf + 300;
    Counters before = db->counters();
    ASSERT_TRUE(table.get(k, v));
    EXPECT_EQ(v, k);
    Counters delta = db->counters() - before;
    EXPECT_EQ(delta.ssd_pages_read, 0u);
    if (delta.nvm_lines_read == 0) continue;  // the leaf was still in DRAM
    EXPECT_LE(delta.nvm_lines_read, 20u) << "key " << k;
    ++checked;
  }
  EXPECT_GT(checked, 10u) << "most of these leaves should have been cold";
}
