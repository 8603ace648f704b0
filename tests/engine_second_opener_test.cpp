// One engine per database: the NVM and SSD files are locked while a Database is open, so a
// second Database::open on them, in this process or another, is an Error.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/error.hpp"
#include "tests/engine_open_support.hpp"

using namespace tristore;
using namespace tristore::open_test;
using testing_support::DatabaseFiles;

TEST(EngineSecondOpener, IsAnErrorWhileTheFirstIsOpenAndWorksAfterItCloses) {
  for (Architecture arch : kDurable) {
    SCOPED_TRACE(name(arch));
    DatabaseFiles files;
    {
      auto first = Database::open(small_config(arch, files));
      for (OpenMode mode :
           {OpenMode::kOpenOrCreate, OpenMode::kOpenExisting, OpenMode::kCreateReplacing}) {
        const std::string error = open_error(small_config(arch, files, mode));
        EXPECT_NE(error.find("is already open"), std::string::npos)
            << open_mode_name(mode) << ": " << error;
      }
      write_rows(*first);  // the first engine goes on undisturbed
    }
    auto second = Database::open(small_config(arch, files));
    expect_rows(*second);
  }
}

TEST(EngineSecondOpener, InAnotherProcessIsAnError) {
  for (Architecture arch : kDurable) {
    SCOPED_TRACE(name(arch));
    DatabaseFiles files;
    auto first = Database::open(small_config(arch, files));
    write_rows(*first);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // Exit status 0: refused as already open. _exit: the parent's objects are not ours.
      try {
        Database::open(small_config(arch, files)).release();
      } catch (const Error& error) {
        ::_exit(std::string(error.what()).find("is already open") != std::string::npos ? 0 : 2);
      }
      ::_exit(1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the second engine opened; 2: another error";
    expect_rows(*first);
  }
}
