// Every handle of a table is the same table: create_table and open_table hand out handles to
// the database's one object per table. Found by a review of the table API: each handle had an
// object of its own, so a handle logged no root change where another handle had moved the
// root, a scan through one handle missed the rows an open transaction removed through another,
// and a transaction's undo pointed into the object of a handle that was gone. Also: a table
// name that is refused allocates no page, and a name with a NUL is refused.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "architecture_test_name.hpp"
#include "common/error.hpp"
#include "engine/lock_manager.hpp"
#include "tests/engine_open_support.hpp"

namespace tristore {
namespace {

using testing_support::DatabaseFiles;

// 1000 bytes: 16 rows fill a leaf, so a few dozen rows split and merge the root.
using Row = std::array<std::uint64_t, 125>;
Row row(std::uint64_t key) {
  Row r{};
  r.fill(key * 7 + 1);
  return r;
}
using Rows = Table<std::uint64_t, Row>;

class TableHandles : public ::testing::TestWithParam<Architecture> {
 protected:
  Config config(OpenMode mode) const {
    Config config = open_test::small_config(GetParam(), files_, mode);
    config.checkpoint_interval_bytes = 256 * kMiB;  // none but the ones the test names
    return config;
  }
  bool durable() const { return GetParam() != Architecture::kMainMemory; }
  std::uint64_t pages_in_use(Database& db) const {
    const MemoryUsage usage = db.memory_usage();
    return GetParam() == Architecture::kNvmDirect || GetParam() == Architecture::kBasicNvm
               ? usage.nvm_bytes
               : usage.ssd_bytes;
  }
  DatabaseFiles files_{"tristore-table-handles"};
};

// The root grows through one handle, collapses, and grows again through the other, whose root
// page (nvm-direct reuses the freed slot first) was the first root's: then the root it last
// logged looked unchanged to it, and the crash lost every row right of the catalog's root.
TEST_P(TableHandles, EachLogsTheRootTheOtherMoved) {
  if (!durable()) GTEST_SKIP() << "nothing survives a crash";
  std::map<std::uint64_t, Row> model;
  {
    auto db = Database::open(config(OpenMode::kCreateReplacing));
    Rows a = db->create_table<std::uint64_t, Row>("rows");
    Rows b = db->open_table<std::uint64_t, Row>("rows");
    for (std::uint64_t k = 0; k < 40; ++k) ASSERT_TRUE(a.insert(k, row(k)));
    for (std::uint64_t k = 0; k < 38; ++k) ASSERT_TRUE(a.remove(k));
    for (std::uint64_t k = 38; k < 40; ++k) model[k] = row(k);
    for (std::uint64_t k = 100; k < 160; ++k) {
      ASSERT_TRUE(b.insert(k, row(k)));
      model[k] = row(k);
    }
    db->simulate_crash_on_close();
  }
  auto db = Database::open(config(OpenMode::kOpenExisting));
  Rows rows = db->open_table<std::uint64_t, Row>("rows");
  std::map<std::uint64_t, Row> found;
  rows.scan(0, SIZE_MAX, [&](const std::uint64_t& key, const Row& value) {
    found[key] = value;
    return true;
  });
  EXPECT_EQ(found.size(), model.size());
  EXPECT_TRUE(found == model) << "the rows after the crash are not the committed ones";
}

TEST_P(TableHandles, AScanThroughOneMeetsARowAnOpenTransactionRemovedThroughAnother) {
  auto db = Database::open(config(OpenMode::kCreateReplacing));
  Rows a = db->create_table<std::uint64_t, Row>("rows");
  for (std::uint64_t k = 0; k < 100; ++k) ASSERT_TRUE(a.insert(k, row(k)));
  Rows b = db->open_table<std::uint64_t, Row>("rows");
  Transaction remover = db->begin();
  ASSERT_TRUE(a.remove(remover, 50));
  const auto visit = [](const std::uint64_t&, const Row&) { return true; };
  EXPECT_THROW(b.scan(0, SIZE_MAX, visit), LockConflict) << "the scan saw an uncommitted remove";
  Transaction scanner = db->begin();
  EXPECT_THROW(b.scan(scanner, 0, SIZE_MAX, visit), LockConflict);
  scanner.abort();
  remover.abort();
  EXPECT_EQ(b.scan(0, SIZE_MAX, visit), 100u);
}

TEST_P(TableHandles, ATransactionOutlivesTheHandlesItChangedTablesThrough) {
  auto db = Database::open(config(OpenMode::kCreateReplacing));
  db->create_table<std::uint64_t, Row>("rows").insert(1, row(1));
  Transaction txn = db->begin();
  {
    Rows rows = db->open_table<std::uint64_t, Row>("rows");
    ASSERT_TRUE(rows.update(txn, 1, row(2)));
    ASSERT_TRUE(rows.insert(txn, 3, row(3)));
    ASSERT_TRUE(rows.remove(txn, 3));
    ASSERT_TRUE(rows.insert(txn, 4, row(4)));
  }
  txn.abort();  // the undo runs on the table the handle named
  Rows rows = db->open_table<std::uint64_t, Row>("rows");
  Row seen{};
  ASSERT_TRUE(rows.get(1, seen));
  EXPECT_EQ(seen, row(1));
  EXPECT_FALSE(rows.get(4, seen));
}

TEST_P(TableHandles, OtherTypesOfTheSameSizesAreAnError) {
  auto db = Database::open(config(OpenMode::kCreateReplacing));
  db->create_table<std::uint64_t, std::uint64_t>("t");
  EXPECT_THROW((db->open_table<std::uint64_t, double>("t")), Error);
  EXPECT_NO_THROW((db->open_table<std::uint64_t, std::uint64_t>("t")));
}

TEST_P(TableHandles, ARefusedNameAllocatesNoPage) {
  if (!durable()) GTEST_SKIP() << "no pages in files";
  std::uint64_t before = 0;
  {
    auto db = Database::open(config(OpenMode::kCreateReplacing));
    db->create_table<std::uint64_t, Row>("rows").insert(1, row(1));
    db->checkpoint();
    before = pages_in_use(*db);
    for (const std::string& refused : {std::string(), std::string(48, 'x'), std::string("rows")})
      EXPECT_THROW((db->create_table<std::uint64_t, Row>(refused)), Error) << refused;
    db->checkpoint();
    EXPECT_EQ(pages_in_use(*db), before);
  }
  auto db = Database::open(config(OpenMode::kOpenExisting));
  EXPECT_EQ(pages_in_use(*db), before) << "a refused name's root lives on in no tree";
}

// Saved names end at their first NUL: two such names came back as one, and the database no
// longer opened.
TEST_P(TableHandles, ANameWithANulIsRefused) {
  auto db = Database::open(config(OpenMode::kCreateReplacing));
  using namespace std::string_view_literals;
  EXPECT_THROW((db->create_table<std::uint64_t, Row>("a\0b"sv)), Error);
  db->create_table<std::uint64_t, Row>("a");
  db.reset();
  if (durable()) {
    EXPECT_NO_THROW(Database::open(config(OpenMode::kOpenExisting)));
  }
}

INSTANTIATE_TEST_SUITE_P(EveryArchitecture, TableHandles,
                         testing::Values(Architecture::kMainMemory, Architecture::kThreeTier,
                                         Architecture::kBasicNvm, Architecture::kNvmDirect,
                                         Architecture::kSsdBm),
                         testing_support::ArchitectureTestName{});

}  // namespace
}  // namespace tristore
