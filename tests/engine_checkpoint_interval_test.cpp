// The checkpoint interval (Config::checkpoint_interval_bytes): a checkpoint runs each time the
// log has grown by the interval, long before the log is full, so restart replays at most about
// that much; the default is a quarter of the log. Seeds are printed; TRISTORE_SEED replays.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "architecture_test_name.hpp"
#include "engine/database.hpp"
#include "engine/restart_report.hpp"
#include "engine/storage_files.hpp"
#include "engine/table.hpp"
#include "tests/engine_log_space_support.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using namespace log_space_test;

// Autocommit updates until `bytes` of log were written; returns the checkpoints they ran.
std::uint64_t update_until(Database& db, RowTable& table, std::uint64_t bytes, std::uint64_t seed,
                           Model& model) {
  std::mt19937_64 random(seed);
  const Counters before = db.counters();
  for (std::uint64_t version = 1;
       db.counters().log_bytes_written - before.log_bytes_written < bytes; ++version) {
    const std::uint64_t key = 2 * (random() % kLoadedRows);
    EXPECT_TRUE(table.update(key, make_row(key, version)));
    model[key] = make_row(key, version);
  }
  return db.counters().log_checkpoints - before.log_checkpoints;
}

class EngineCheckpointInterval : public testing::TestWithParam<Architecture> {};

TEST_P(EngineCheckpointInterval, ACheckpointRunsEachTimeTheLogGrowsByTheInterval) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  testing_support::DatabaseFiles files("tristore-checkpoint-interval");
  Config config = config_for(arch, files, true);
  config.nvm_bytes = 64 * kMiB;  // 8 MiB of log area
  const std::uint64_t area = nvm_log_bytes(config.nvm_bytes);
  config.checkpoint_interval_bytes = area / 16;
  Model model = loaded_model();
  {
    auto db = Database::open(config);
    auto table = db->create_table<std::uint64_t, Row>("rows");
    load(table);
    // Four times the interval: four checkpoints (the last may wait for the next operation),
    // where a full log would have needed four times as much.
    const std::uint64_t checkpoints = update_until(*db, table, 4 * area / 16, seed, model);
    EXPECT_GE(checkpoints, 3u);
    EXPECT_LE(checkpoints, 5u);
    db->simulate_crash_on_close();
  }
  // Restart replays no more than about one interval (plus the records of the last operation).
  config.open_mode = OpenMode::kOpenExisting;
  auto db = Database::open(config);
  EXPECT_LE(db->restart_report().log_bytes_scanned, area / 16 + 64 * 1024);
  auto table = db->open_table<std::uint64_t, Row>("rows");
  EXPECT_TRUE(same(scan_all(table), model)) << difference(model, scan_all(table));
}

TEST_P(EngineCheckpointInterval, TheDefaultIsAQuarterOfTheLog) {
  const Architecture arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  testing_support::DatabaseFiles files("tristore-checkpoint-interval");
  Config config = config_for(arch, files, true);
  config.nvm_bytes = 64 * kMiB;
  const std::uint64_t area = nvm_log_bytes(config.nvm_bytes);
  auto db = Database::open(config);
  auto table = db->create_table<std::uint64_t, Row>("rows");
  load(table);
  Model model = loaded_model();
  // Most of the log's capacity: without an interval no checkpoint would be due yet.
  const std::uint64_t checkpoints = update_until(*db, table, area * 3 / 5, seed, model);
  EXPECT_GE(checkpoints, 2u);
  EXPECT_LE(checkpoints, 3u);
}

INSTANTIATE_TEST_SUITE_P(Durable, EngineCheckpointInterval, testing::ValuesIn(kDurable),
                         testing_support::ArchitectureTestName{});

}  // namespace
}  // namespace tristore
