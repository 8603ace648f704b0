// An open that refuses a file writes nothing, even where a crash left something to mend: a
// slot header line with one intact version gets its mirror back, and the log its new epoch,
// only once every file has been read and found good. Found by a review of the open path: the
// NVM tier's open mended the mirrors before the SSD file was checked, and the log was opened
// (its header written) before the catalog was read.
#include <gtest/gtest.h>

#include <string>

#include "architecture_test_name.hpp"
#include "nvm/nvm_layout.hpp"
#include "tests/engine_corruption_support.hpp"
#include "tests/engine_open_support.hpp"

namespace tristore {
namespace {

using testing_support::DatabaseFiles;

constexpr std::uint64_t kRows = 1500;

// A closed database whose first occupied slot's header line has one version damaged, as a
// crash between an update's fence and its mirror leaves it (the other version is intact).
void build_with_a_half_mirrored_line(const Config& config) {
  corruption_test::build(config, kRows, false);
  const corruption_test::NvmFileMap map = corruption_test::map_nvm_file(config.nvm_path);
  ASSERT_FALSE(map.occupied.empty());
  corruption_test::flip_byte(config.nvm_path, map.header_line_offset(map.occupied.front()) + 37);
}

TEST(EngineRefusedOpen, AForeignSsdFileLeavesTheNvmFileAsItWas) {
  DatabaseFiles files("tristore-refused-open"), other("tristore-refused-open-other");
  build_with_a_half_mirrored_line(
      corruption_test::config_for(Architecture::kThreeTier, files, true));
  corruption_test::build(corruption_test::config_for(Architecture::kThreeTier, other, true), 10,
                         false);
  Config foreign = corruption_test::config_for(Architecture::kThreeTier, files, false);
  foreign.ssd_path = other.ssd;
  const std::string nvm_before = open_test::file_bytes(files.nvm);
  EXPECT_NE(open_test::open_error(foreign), "");
  EXPECT_TRUE(open_test::file_bytes(files.nvm) == nvm_before) << "the refused open wrote NVM";
  // Opened with its own SSD file, the database mends the line and reads every row.
  EXPECT_EQ(corruption_test::read_back(
                corruption_test::config_for(Architecture::kThreeTier, files, false), kRows)
                .outcome,
            corruption_test::Outcome::kIntact);
}

class EngineRefusedOpenNvmCatalog : public ::testing::TestWithParam<Architecture> {};

TEST_P(EngineRefusedOpenNvmCatalog, ADamagedCatalogLeavesTheFilesAsTheyWere) {
  DatabaseFiles files("tristore-refused-open");
  build_with_a_half_mirrored_line(corruption_test::config_for(GetParam(), files, true));
  // Both copies of the catalog (halves of the metadata area).
  corruption_test::flip_byte(files.nvm, kNvmMetadataOffset + 8);
  corruption_test::flip_byte(files.nvm, kNvmMetadataOffset + kNvmMetadataBytes / 2 + 8);
  const open_test::FileBytes before(files);
  const std::string error =
      open_test::open_error(corruption_test::config_for(GetParam(), files, false));
  EXPECT_NE(error.find("catalog"), std::string::npos) << error;
  EXPECT_TRUE(open_test::FileBytes(files) == before) << "the refused open wrote a file";
}

INSTANTIATE_TEST_SUITE_P(CatalogInNvm, EngineRefusedOpenNvmCatalog,
                         testing::Values(Architecture::kBasicNvm, Architecture::kNvmDirect),
                         testing_support::ArchitectureTestName{});

}  // namespace
}  // namespace tristore
