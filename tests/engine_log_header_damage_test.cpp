// The log header's two copies must protect the log: a byte spoiled in the newer copy after a
// crash (the older copy is then a header write behind: an older end bound or epoch) must
// neither drop committed operations nor open a shorter log. Spoiling both copies is an Error.
// Every durable architecture.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "engine/database.hpp"
#include "engine/log_header.hpp"
#include "engine/storage_files.hpp"
#include "engine/table.hpp"
#include "tests/engine_crash_test_support.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using crash_test::make_row;
using crash_test::Model;
using crash_test::Row;

constexpr std::uint64_t kLoaded = 500;     // keys 0, 2, 4, ...
constexpr std::uint64_t kCommitted = 300;  // odd keys, one autocommit insert each

Config config_for(Architecture arch, const testing_support::DatabaseFiles& files, OpenMode mode) {
  Config config;
  config.architecture = arch;
  config.dram_bytes = 1 * kMiB;
  config.nvm_bytes = 4 * kMiB;  // 512 KiB of log: its end bound moves every 8 KiB
  config.ssd_bytes = 64 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  config.open_mode = mode;
  return config;
}

// Loads, commits kCommitted inserts (the log's end bound moves many times after the load's
// checkpoint), and crashes.
Model crash_after_commits(Architecture arch, const testing_support::DatabaseFiles& files) {
  auto db = Database::open(config_for(arch, files, OpenMode::kCreateReplacing));
  auto table = db->create_table<std::uint64_t, Row>("rows");
  Model model;
  table.bulk_load(kLoaded, [&](std::size_t i, std::uint64_t& key, Row& row) {
    key = 2 * i;
    row = make_row(key, 0);
    model[key] = row;
  });
  for (std::uint64_t i = 0; i < kCommitted; ++i) {
    const std::uint64_t key = 2 * i + 1;
    EXPECT_TRUE(table.insert(key, make_row(key, 1)));
    model[key] = make_row(key, 1);
  }
  db->simulate_crash_on_close();
  return model;
}

// Flips one byte of the log header copies that `pick` names (0: older, 1: newer, 2: both).
void spoil_header(Architecture arch, const testing_support::DatabaseFiles& files, int pick) {
  const Config config = config_for(arch, files, OpenMode::kOpenExisting);
  auto tier =
      arch == Architecture::kSsdBm ? open_log_tier(config, false) : open_nvm_tier(config, false);
  auto* headers = reinterpret_cast<LogHeader*>(tier->log_area().data());
  const std::size_t newer = headers[0].generation > headers[1].generation ? 0 : 1;
  for (std::size_t copy = 0; copy < kLogHeaderCopies; ++copy) {
    if (pick != 2 && (copy == newer) != (pick == 1)) continue;
    std::byte* byte = reinterpret_cast<std::byte*>(&headers[copy]) + 20;
    const std::byte spoiled = *byte ^ std::byte{0x40};
    tier->device().write(byte, &spoiled, 1);
    tier->device().persist(byte, 1);
  }
}

class EngineLogHeaderDamage : public testing::TestWithParam<Architecture> {};

TEST_P(EngineLogHeaderDamage, ASpoiledCopyLosesNoCommittedOperation) {
  for (const int pick : {1, 0}) {
    SCOPED_TRACE(pick == 1 ? "newer copy spoiled" : "older copy spoiled");
    testing_support::DatabaseFiles files("tristore-log-header");
    const Model committed = crash_after_commits(GetParam(), files);
    spoil_header(GetParam(), files, pick);
    auto db = Database::open(config_for(GetParam(), files, OpenMode::kOpenExisting));
    auto table = db->open_table<std::uint64_t, Row>("rows");
    const Model seen = crash_test::scan_all(table);
    EXPECT_TRUE(crash_test::same(seen, committed))
        << crash_test::describe_difference(committed, seen);
  }
}

TEST_P(EngineLogHeaderDamage, BothCopiesSpoiledIsAnError) {
  testing_support::DatabaseFiles files("tristore-log-header");
  crash_after_commits(GetParam(), files);
  spoil_header(GetParam(), files, 2);
  EXPECT_THROW(Database::open(config_for(GetParam(), files, OpenMode::kOpenExisting)), Error);
}

INSTANTIATE_TEST_SUITE_P(DurableArchitectures, EngineLogHeaderDamage,
                         testing::Values(Architecture::kThreeTier, Architecture::kBasicNvm,
                                         Architecture::kSsdBm, Architecture::kNvmDirect),
                         [](const auto& info) {
                           std::string name(architecture_name(info.param));
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace tristore
