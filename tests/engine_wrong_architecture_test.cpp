// Each durable architecture reads its files its own way, so the files name the architecture
// that wrote them: opening them as another is an Error before anything is written.
#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"
#include "tests/engine_open_support.hpp"

using namespace tristore;
using namespace tristore::open_test;
using testing_support::DatabaseFiles;

namespace {

// Committed rows only in the log: the crash leaves them for restart to redo.
void write_rows_and_crash(const Config& config) {
  auto db = Database::open(config);
  write_rows(*db);
  db->simulate_crash_on_close();
}

}  // namespace

TEST(EngineWrongArchitecture, IsAnErrorThatLeavesTheFilesAsTheyWere) {
  for (Architecture written : kDurable) {
    for (Architecture opened : kDurable) {
      if (opened == written) continue;
      SCOPED_TRACE(std::string(name(written)) + " files opened as " + name(opened));
      DatabaseFiles files;
      write_rows_and_crash(small_config(written, files));
      const FileBytes before(files);
      for (OpenMode mode : {OpenMode::kOpenExisting, OpenMode::kOpenOrCreate}) {
        const std::string error = open_error(small_config(opened, files, mode));
        EXPECT_NE(error, "") << "opened as " << name(opened) << " (" << open_mode_name(mode) << ")";
        EXPECT_TRUE(before == FileBytes(files)) << "the refused open changed the files";
      }
      auto db = Database::open(small_config(written, files, OpenMode::kOpenExisting));
      EXPECT_TRUE(db->restart_report().performed);
      expect_rows(*db);
    }
  }
}

TEST(EngineWrongArchitecture, TheErrorNamesBothArchitectures) {
  const struct {
    Architecture written, opened;
    std::string expected;  // where the files share a set, the mismatch itself is reported
  } cases[] = {
      {Architecture::kThreeTier, Architecture::kSsdBm, "holds a 3tier database, not ssd-bm"},
      {Architecture::kSsdBm, Architecture::kThreeTier, "holds a ssd-bm database, not 3tier"},
      {Architecture::kBasicNvm, Architecture::kNvmDirect,
       "holds a basic-nvm database, not nvm-direct"},
      {Architecture::kNvmDirect, Architecture::kBasicNvm,
       "holds a nvm-direct database, not basic-nvm"},
      {Architecture::kThreeTier, Architecture::kBasicNvm, "holds a 3tier database, not basic-nvm"},
      {Architecture::kSsdBm, Architecture::kNvmDirect, "holds a ssd-bm database, not nvm-direct"},
  };
  for (const auto& c : cases) {
    DatabaseFiles files;
    write_rows_and_crash(small_config(c.written, files));
    const std::string error = open_error(small_config(c.opened, files));
    EXPECT_NE(error.find(c.expected), std::string::npos) << error;
  }
}
