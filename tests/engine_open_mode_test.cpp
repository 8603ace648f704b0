// Config::open_mode: only kCreateReplacing destroys files; the default reopens a database.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "tests/engine_open_support.hpp"

using namespace tristore;
using namespace tristore::open_test;
using testing_support::DatabaseFiles;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(EngineOpenMode, TheDefaultOpensAnExistingDatabaseWithItsTables) {
  EXPECT_EQ(Config{}.open_mode, OpenMode::kOpenOrCreate);
  for (Architecture arch : kDurable) {
    SCOPED_TRACE(name(arch));
    DatabaseFiles files;
    {
      auto db = Database::open(small_config(arch, files));  // no files yet: creates them
      EXPECT_FALSE(db->restart_report().performed);
      write_rows(*db);
    }
    auto db = Database::open(small_config(arch, files));
    expect_rows(*db);
  }
}

TEST(EngineOpenMode, CreateNewOverAnExistingDatabaseIsAnErrorAndTouchesNoFile) {
  for (Architecture arch : kDurable) {
    SCOPED_TRACE(name(arch));
    DatabaseFiles files;
    {
      auto db = Database::open(small_config(arch, files, OpenMode::kCreateNew));
      write_rows(*db);
    }
    const FileBytes before(files);
    const std::string error = open_error(small_config(arch, files, OpenMode::kCreateNew));
    EXPECT_TRUE(contains(error, "create-new: NVM file " + files.nvm + " exists already")) << error;
    EXPECT_TRUE(before == FileBytes(files)) << "create-new changed the files";
    expect_rows(*Database::open(small_config(arch, files, OpenMode::kOpenExisting)));
  }
}

TEST(EngineOpenMode, CreateNewRefusesAnExistingSsdFileToo) {
  DatabaseFiles files;
  { std::ofstream(files.ssd) << "someone else's"; }
  const std::string error =
      open_error(small_config(Architecture::kThreeTier, files, OpenMode::kCreateNew));
  EXPECT_TRUE(contains(error, "SSD file " + files.ssd + " exists already")) << error;
  EXPECT_FALSE(std::filesystem::exists(files.nvm)) << "nothing created";
  EXPECT_EQ(file_bytes(files.ssd), "someone else's");
}

TEST(EngineOpenMode, OpenExistingWithoutFilesIsAnErrorAndCreatesNothing) {
  for (Architecture arch : kDurable) {
    SCOPED_TRACE(name(arch));
    DatabaseFiles files;
    const std::string error = open_error(small_config(arch, files, OpenMode::kOpenExisting));
    EXPECT_TRUE(contains(error, "open-existing: NVM file " + files.nvm + " does not exist"))
        << error;
    EXPECT_FALSE(std::filesystem::exists(files.nvm));
    EXPECT_FALSE(std::filesystem::exists(files.ssd));
  }
}

TEST(EngineOpenMode, HalfADatabaseIsRefusedNotRecreated) {
  for (Architecture arch : {Architecture::kThreeTier, Architecture::kSsdBm}) {
    for (bool keep_nvm : {true, false}) {
      SCOPED_TRACE(std::string(name(arch)) + (keep_nvm ? ", NVM file kept" : ", SSD file kept"));
      DatabaseFiles files;
      {
        auto db = Database::open(small_config(arch, files));
        write_rows(*db);
      }
      std::filesystem::remove(keep_nvm ? files.ssd : files.nvm);
      const FileBytes before(files);
      for (OpenMode mode : {OpenMode::kOpenOrCreate, OpenMode::kOpenExisting}) {
        const std::string error = open_error(small_config(arch, files, mode));
        EXPECT_TRUE(contains(error, keep_nvm ? files.ssd : files.nvm)) << error;
        EXPECT_TRUE(before == FileBytes(files)) << "the half that exists was changed";
      }
    }
  }
}

TEST(EngineOpenMode, CreateReplacingDiscardsTheOldDatabase) {
  for (Architecture arch : kDurable) {
    SCOPED_TRACE(name(arch));
    DatabaseFiles files;
    {
      auto db = Database::open(small_config(arch, files));
      write_rows(*db);
    }
    auto db = Database::open(small_config(arch, files, OpenMode::kCreateReplacing));
    EXPECT_THROW((db->open_table<std::uint64_t, std::uint64_t>("rows")), Error);
    write_rows(*db);  // the name is free again
  }
}

TEST(EngineOpenMode, MainMemoryHasNothingToOpen) {
  Config config;
  config.architecture = Architecture::kMainMemory;
  config.dram_bytes = 64 * kMiB;
  for (OpenMode mode :
       {OpenMode::kOpenOrCreate, OpenMode::kCreateNew, OpenMode::kCreateReplacing}) {
    config.open_mode = mode;
    EXPECT_NO_THROW(Database::open(config)) << open_mode_name(mode);
  }
  config.open_mode = OpenMode::kOpenExisting;
  EXPECT_TRUE(contains(open_error(config), "volatile"));
}

// The SSD tier would overwrite the NVM log (the bug: "log: checkpoint LSN 120 is not a record
// of the log"). Compared as files, not as strings.
TEST(EngineOpenMode, NvmAndSsdPathsNamingTheSameFileAreAnError) {
  for (Architecture arch : {Architecture::kThreeTier, Architecture::kSsdBm}) {
    SCOPED_TRACE(name(arch));
    DatabaseFiles files;
    // 1. Nothing exists yet: the same path, spelled differently.
    Config config = small_config(arch, files);
    for (const std::string& spelling :
         {files.nvm_dir.file(".") + "/db.nvm", std::filesystem::relative(files.nvm).string()}) {
      config.ssd_path = spelling;
      EXPECT_TRUE(contains(open_error(config), "name the same file")) << open_error(config);
    }
    EXPECT_FALSE(std::filesystem::exists(files.nvm)) << "nothing created";
    // 2. An existing database whose NVM file the SSD path reaches through a link.
    {
      auto db = Database::open(small_config(arch, files));
      write_rows(*db);
    }
    const std::string link = files.ssd_dir.file("link.ssd");
    std::filesystem::create_symlink(files.nvm, link);
    const std::string hard_link = files.nvm_dir.file("hard.ssd");
    std::filesystem::create_hard_link(files.nvm, hard_link);
    const FileBytes before(files);
    for (const std::string& alias : {link, hard_link, files.nvm}) {
      for (OpenMode mode : {OpenMode::kOpenOrCreate, OpenMode::kOpenExisting, OpenMode::kCreateNew,
                            OpenMode::kCreateReplacing}) {
        config = small_config(arch, files, mode);
        config.ssd_path = alias;
        const std::string error = open_error(config);
        EXPECT_TRUE(contains(error, "the NVM path '" + files.nvm + "' and the SSD path '" + alias +
                                        "' name the same file"))
            << error;
      }
    }
    EXPECT_TRUE(before == FileBytes(files));
    expect_rows(*Database::open(small_config(arch, files)));
  }
}
