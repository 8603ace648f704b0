#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/error.hpp"
#include "emulation/wear_counters.hpp"
#include "engine/database.hpp"
#include "engine/storage_files.hpp"
#include "engine/table.hpp"
#include "engine/transaction.hpp"

using namespace tristore;

namespace {

Config main_memory_config(std::uint64_t dram_bytes = 64 * kMiB) {
  Config config;
  config.architecture = Architecture::kMainMemory;
  config.dram_bytes = dram_bytes;
  return config;
}

struct Account {
  std::uint64_t balance;
  std::array<char, 56> name;
};

}  // namespace

TEST(EngineDatabase, MainMemoryTableRoundTrip) {
  auto db = Database::open(main_memory_config());
  auto accounts = db->create_table<std::uint64_t, Account>("accounts");
  for (std::uint64_t k = 0; k < 10000; ++k) {
    Account a{k * 10, {}};
    std::snprintf(a.name.data(), a.name.size(), "user%llu", static_cast<unsigned long long>(k));
    ASSERT_TRUE(accounts.insert(k, a));
  }
  Account a;
  ASSERT_TRUE(accounts.get(1234, a));
  EXPECT_EQ(a.balance, 12340u);
  EXPECT_STREQ(a.name.data(), "user1234");
  EXPECT_FALSE(accounts.insert(1234, a));

  std::uint64_t balance = 7;
  ASSERT_TRUE(accounts.update_part(1234, offsetof(Account, balance), sizeof(balance), &balance));
  std::uint64_t read_back = 0;
  ASSERT_TRUE(accounts.get_part(1234, 0, sizeof(read_back), &read_back));
  EXPECT_EQ(read_back, 7u);

  std::vector<std::uint64_t> keys;
  EXPECT_EQ(accounts.scan(9995, 100,
                          [&](const std::uint64_t& k, const Account&) {
                            keys.push_back(k);
                            return true;
                          }),
            5u);
  EXPECT_EQ(keys, (std::vector<std::uint64_t>{9995, 9996, 9997, 9998, 9999}));
  EXPECT_TRUE(accounts.remove(9999));
  EXPECT_FALSE(accounts.get(9999, a));
  EXPECT_GT(db->memory_usage().dram_bytes, 10000 * sizeof(Account));
}

TEST(EngineDatabase, OpenTableSharesTheRootWithCreateTable) {
  auto db = Database::open(main_memory_config());
  auto created = db->create_table<std::uint32_t, std::uint32_t>("t");
  auto opened = db->open_table<std::uint32_t, std::uint32_t>("t");
  for (std::uint32_t k = 0; k < 5000; ++k) created.insert(k, k + 1);  // grows the root
  std::uint32_t v = 0;
  ASSERT_TRUE(opened.get(4999, v));
  EXPECT_EQ(v, 5000u);
}

// A table whose rows an unfinished transaction removed looks empty, but its abort puts them
// back: a bulk load then would have its rows overwritten by that undo (found by a review).
TEST(EngineDatabase, BulkLoadIntoATableAnUnfinishedTransactionEmptiedIsAnError) {
  auto db = Database::open(main_memory_config());
  auto t = db->create_table<std::uint32_t, std::uint32_t>("t");
  ASSERT_TRUE(t.insert(5, 50));
  Transaction remover = db->begin();
  ASSERT_TRUE(t.remove(remover, 5));
  const auto load = [&] {
    t.bulk_load(10, [](std::size_t i, std::uint32_t& k, std::uint32_t& v) {
      k = static_cast<std::uint32_t>(i);
      v = static_cast<std::uint32_t>(i);
    });
  };
  EXPECT_THROW(load(), Error);
  remover.abort();
  std::uint32_t v = 0;
  ASSERT_TRUE(t.get(5, v));
  EXPECT_EQ(v, 50u) << "the abort's row";
  ASSERT_TRUE(t.remove(5));
  EXPECT_NO_THROW(load());
  ASSERT_TRUE(t.get(5, v));
  EXPECT_EQ(v, 5u);
}

TEST(EngineDatabase, CatalogErrorsAreOneLineErrors) {
  auto db = Database::open(main_memory_config());
  db->create_table<std::uint32_t, std::uint64_t>("t");
  EXPECT_THROW((db->create_table<std::uint32_t, std::uint64_t>("t")), Error);
  EXPECT_THROW((db->open_table<std::uint32_t, std::uint64_t>("missing")), Error);
  EXPECT_THROW((db->open_table<std::uint64_t, std::uint64_t>("t")), Error);
  EXPECT_THROW((db->create_table<std::uint32_t, std::uint64_t>("")), Error);
  EXPECT_THROW((db->create_table<std::uint32_t, std::uint64_t>(std::string(48, 'x'))), Error);
}

TEST(EngineDatabase, PartOutsideTheValueIsAnError) {
  auto db = Database::open(main_memory_config());
  auto t = db->create_table<std::uint32_t, std::uint64_t>("t");
  t.insert(1, 1);
  char buffer[16];
  EXPECT_THROW(t.get_part(1, 4, 8, buffer), Error);
  EXPECT_THROW(t.update_part(1, 9, 0, buffer), Error);
  EXPECT_TRUE(t.get_part(1, 4, 4, buffer));
  EXPECT_TRUE(t.get_part(1, 8, 0, buffer)) << "an empty part of a present key";
  EXPECT_FALSE(t.update_part(2, 0, 0, buffer));
}

TEST(EngineDatabase, MainMemoryBudgetIsEnforced) {
  EXPECT_THROW(Database::open(main_memory_config(16 * 1024)), Error);
  auto db = Database::open(main_memory_config(1 * kMiB));
  auto t = db->create_table<std::uint64_t, std::array<char, 1000>>("big");
  std::array<char, 1000> value{};
  try {
    for (std::uint64_t k = 0; k < 10000; ++k) t.insert(k, value);
    FAIL() << "1 MiB cannot hold 10 MB";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the DRAM budget (1 MiB)"), std::string::npos)
        << e.what();
  }
  EXPECT_LE(db->memory_usage().dram_bytes, 1 * kMiB);
  std::array<char, 1000> out;
  EXPECT_TRUE(t.get(0, out)) << "the tree stays usable after the error";
}

TEST(EngineDatabase, BulkLoadThroughTheTable) {
  auto db = Database::open(main_memory_config());
  auto t = db->create_table<std::uint64_t, std::uint64_t>("t");
  t.bulk_load(100000, [](std::size_t i, std::uint64_t& k, std::uint64_t& v) {
    k = i * 2;
    v = i;
  });
  std::uint64_t v = 0;
  ASSERT_TRUE(t.get(2 * 77777, v));
  EXPECT_EQ(v, 77777u);
  EXPECT_FALSE(t.get(2 * 77777 + 1, v));
  // 0.66 fill: about 100000 / 670 leaves.
  EXPECT_LT(db->memory_usage().dram_bytes, 160 * kPageSize);
  EXPECT_GT(db->memory_usage().dram_bytes, 140 * kPageSize);
}

namespace {

// A unique NVM file under /dev/shm, removed afterwards.
struct TempNvmFile {
  std::string path = "/dev/shm/tristore-engine-test-" + std::to_string(::getpid()) + "-" +
                     std::to_string(counter++) + ".nvm";
  ~TempNvmFile() { std::remove(path.c_str()); }
  static inline int counter = 0;
};

Config nvm_direct_config(const std::string& path, bool create = true) {
  Config config;
  config.architecture = Architecture::kNvmDirect;
  config.nvm_path = path;
  config.nvm_bytes = 32 * kMiB;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  return config;
}

}  // namespace

TEST(EngineDatabase, NvmDirectReopensWithItsTables) {
  TempNvmFile file;
  {
    auto db = Database::open(nvm_direct_config(file.path));
    auto t = db->create_table<std::uint64_t, std::uint64_t>("numbers");
    auto u = db->create_table<std::uint32_t, Account>("accounts");
    for (std::uint64_t k = 0; k < 20000; ++k) ASSERT_TRUE(t.insert(k, k * k));
    u.insert(7, Account{70, {}});
    Counters c = db->counters();
    EXPECT_GT(c.nvm_lines_read, 0u);
    EXPECT_GT(c.nvm_lines_written, 0u);
    EXPECT_GT(db->memory_usage().nvm_bytes, 20000u * 16);
  }
  auto db = Database::open(nvm_direct_config(file.path, false));
  auto t = db->open_table<std::uint64_t, std::uint64_t>("numbers");
  std::uint64_t v = 0;
  for (std::uint64_t k = 0; k < 20000; k += 99) {
    ASSERT_TRUE(t.get(k, v));
    EXPECT_EQ(v, k * k);
  }
  Account a;
  ASSERT_TRUE((db->open_table<std::uint32_t, Account>("accounts").get(7, a)));
  EXPECT_EQ(a.balance, 70u);
  EXPECT_THROW((db->open_table<std::uint32_t, std::uint32_t>("numbers")), Error);
}

TEST(EngineDatabase, NvmDirectLookupChargesFewLines) {
  TempNvmFile file;
  auto db = Database::open(nvm_direct_config(file.path));
  auto t = db->create_table<std::uint64_t, std::uint64_t>("t");
  t.bulk_load(
      600, [](std::size_t i, std::uint64_t& k, std::uint64_t& v) { k = v = i; }, 1.0);
  Counters before = db->counters();
  std::uint64_t v;
  ASSERT_TRUE(t.get(300, v));
  Counters after = db->counters();
  EXPECT_LE(after.nvm_lines_read - before.nvm_lines_read, 12u);
  EXPECT_EQ(after.nvm_lines_written, before.nvm_lines_written) << "a lookup writes nothing";
  ASSERT_TRUE(t.update(300, 1));  // the page's first change after a checkpoint: a full image
  const Counters first = db->counters();
  ASSERT_TRUE(t.update(300, 2));
  EXPECT_LE(db->counters().nvm_lines_written - first.nvm_lines_written, 16u)
      << "an update persists its value line, the page LSN line and a few lines of log";
}

TEST(EngineDatabase, NvmDirectConfigurationErrors) {
  TempNvmFile file;
  EXPECT_THROW(Database::open(nvm_direct_config("/no/such/dir/x.nvm")), Error);
  EXPECT_THROW(Database::open(nvm_direct_config(file.path, false)), Error) << "missing file";
  Config tiny = nvm_direct_config(file.path);
  tiny.nvm_bytes = 4096;
  EXPECT_THROW(Database::open(tiny), Error);
  {
    std::FILE* f = std::fopen(file.path.c_str(), "wb");
    std::vector<char> junk(8 * kMiB, 'x');
    std::fwrite(junk.data(), 1, junk.size(), f);
    std::fclose(f);
  }
  EXPECT_THROW(Database::open(nvm_direct_config(file.path, false)), Error) << "not ours";
}

namespace {

// NVM under /dev/shm, SSD in a fresh directory under /tmp; both removed afterwards.
struct TempTieredFiles {
  TempNvmFile nvm;
  std::filesystem::path ssd_dir;
  TempTieredFiles() {
    char tmpl[] = "/tmp/tristore-engine-test-XXXXXX";
    ssd_dir = ::mkdtemp(tmpl);
  }
  ~TempTieredFiles() { std::filesystem::remove_all(ssd_dir); }
  Config config(Architecture arch, bool create = true) const {
    Config c;
    c.architecture = arch;
    c.dram_bytes = 2 * kMiB;
    c.nvm_bytes = 8 * kMiB;
    c.ssd_bytes = 32 * kMiB;
    c.nvm_path = nvm.path;
    c.ssd_path = (ssd_dir / "db.ssd").string();
    c.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
    return c;
  }
};

}  // namespace

TEST(EngineDatabase, BufferedArchitecturesReopenWithTheirTables) {
  for (Architecture arch :
       {Architecture::kThreeTier, Architecture::kBasicNvm, Architecture::kSsdBm}) {
    SCOPED_TRACE(std::string(architecture_name(arch)));
    TempTieredFiles files;
    {
      auto db = Database::open(files.config(arch));
      auto t = db->create_table<std::uint64_t, Account>("accounts");
      for (std::uint64_t k = 0; k < 20000; ++k) ASSERT_TRUE(t.insert(k, Account{k, {}}));
      EXPECT_LE(db->memory_usage().dram_bytes, 2 * kMiB);
    }
    auto db = Database::open(files.config(arch, false));
    auto t = db->open_table<std::uint64_t, Account>("accounts");
    Account a;
    for (std::uint64_t k = 0; k < 20000; k += 97) {
      ASSERT_TRUE(t.get(k, a)) << k;
      EXPECT_EQ(a.balance, k);
    }
    EXPECT_EQ(t.scan(0, 100000, [](const std::uint64_t&, const Account&) { return true; }), 20000u);
  }
}

TEST(EngineDatabase, BufferedConfigurationErrors) {
  TempTieredFiles files;
  Config small_dram = files.config(Architecture::kThreeTier);
  small_dram.dram_bytes = 64 * 1024;
  EXPECT_THROW(Database::open(small_dram), Error);
  Config small_nvm = files.config(Architecture::kBasicNvm);
  small_nvm.nvm_bytes = 8192;
  EXPECT_THROW(Database::open(small_nvm), Error);
  Config missing_dir = files.config(Architecture::kSsdBm);
  missing_dir.ssd_path = "/tmp/no-such-tristore-dir/db.ssd";
  EXPECT_THROW(Database::open(missing_dir), Error);
  EXPECT_THROW(Database::open(files.config(Architecture::kThreeTier, false)), Error)
      << "nothing to open yet";

  // The SSD file of another database next to this NVM file.
  TempTieredFiles other;
  Database::open(files.config(Architecture::kThreeTier)).reset();
  Database::open(other.config(Architecture::kThreeTier)).reset();
  Config mixed = files.config(Architecture::kThreeTier, false);
  mixed.ssd_path = other.config(Architecture::kThreeTier).ssd_path;
  try {
    Database::open(mixed);
    FAIL() << "files of two databases were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
  }
}

TEST(EngineDatabase, DefaultSsdPathIsUnderTmpdir) {
  Config config;
  const char* old = std::getenv("TMPDIR");
  std::string saved = old ? old : "";
  ::setenv("TMPDIR", "/var/tmp", 1);
  EXPECT_EQ(effective_ssd_path(config), "/var/tmp/tristore.ssd");
  ::unsetenv("TMPDIR");
  EXPECT_EQ(effective_ssd_path(config), "/tmp/tristore.ssd");
  config.ssd_path = "/x/y.ssd";
  EXPECT_EQ(effective_ssd_path(config), "/x/y.ssd");
  if (old) ::setenv("TMPDIR", saved.c_str(), 1);
}

TEST(EngineDatabase, NvmWearCountsWritesPerLineWhenAskedFor) {
  TempTieredFiles files;
  Config config = files.config(Architecture::kNvmDirect);
  config.nvm_wear_counting = true;
  auto db = Database::open(config);
  ASSERT_NE(db->nvm_wear(), nullptr);
  auto t = db->create_table<std::uint64_t, std::uint64_t>("t");
  std::uint64_t before = db->nvm_wear()->total();
  for (int i = 0; i < 100; ++i) t.update(1, i) || t.insert(1, i);
  EXPECT_GE(db->nvm_wear()->total() - before, 100u);
  EXPECT_GE(db->nvm_wear()->histogram().front(), 99u) << "one hot line of one value";
  EXPECT_EQ(Database::open(main_memory_config())->nvm_wear(), nullptr);
}

TEST(EngineDatabase, EmptyPartsAreAllowedOnEveryArchitecture) {
  for (Architecture arch : {Architecture::kThreeTier, Architecture::kNvmDirect}) {
    TempTieredFiles files;
    auto db = Database::open(files.config(arch));
    auto t = db->create_table<std::uint32_t, std::uint64_t>("t");
    t.insert(1, 1);
    char buffer[8];
    EXPECT_TRUE(t.get_part(1, 8, 0, buffer));
    EXPECT_TRUE(t.update_part(1, 0, 0, buffer));
    EXPECT_FALSE(t.get_part(2, 0, 0, buffer));
  }
}
