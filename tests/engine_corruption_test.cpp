// The corruption sweep (issue #10): small databases with committed rows on every durable
// architecture, closed or dropped as by a crash; then one damage at a time in every kind of
// region the test can locate: a flipped byte, a zeroed 64-byte line, a truncated file. Each
// trial reopens the database and reads every row in a forked child (alarm: a hang is a
// failure too). The outcome must be the intact rows or a one-line tristore Error; never a
// crash, a hang, a wrong or missing row. Prints intact / error counts per region.
//
// Known limits have tests of their own, which record them (run with
// --gtest_also_run_disabled_tests): the log header copies (engine/log_*, another change
// handles them), and nvm-direct pages changed since the last checkpoint, after a crash (their
// checksums are renewed at checkpoints only; docs/durability.md).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tests/engine_corruption_support.hpp"

namespace tristore {
namespace {

using corruption_test::Outcome;
using corruption_test::ReadBack;
using testing_support::DatabaseFiles;

constexpr std::uint64_t kRows = 2000;
constexpr unsigned kTrialSeconds = 30;

struct Damage {
  std::string region;
  std::string what;
  std::function<void()> apply;
};

// Which damages a sweep makes.
enum class Regions {
  kAll,                          // every region but the two below (each a test of its own)
  kLogHeaderOnly,                // the log header copies
  kPagesChangedSinceCheckpoint,  // NVM pages changed since the last checkpoint (crash only)
};

struct Tally {
  int intact = 0, error = 0, crash = 0, hang = 0, wrong = 0;
  std::vector<std::string> failures;
};

class EngineCorruption : public ::testing::Test {
 protected:
  // Builds the database (closed or crashed), damages it trial by trial, and returns the
  // outcomes per region.
  std::map<std::string, Tally> sweep(Architecture architecture, bool crash, Regions regions) {
    DatabaseFiles files("tristore-corruption");
    DatabaseFiles pristine("tristore-corruption-pristine");
    const Config build_config = corruption_test::config_for(architecture, files, true);
    const Config open_config = corruption_test::config_for(architecture, files, false);
    const bool has_nvm_pages = architecture != Architecture::kSsdBm;
    const bool has_ssd =
        architecture == Architecture::kThreeTier || architecture == Architecture::kSsdBm;
    // The NVM file as the checkpoint left it: slots that differ after the build were changed
    // since (the pages the log names).
    std::vector<std::byte> at_checkpoint;
    corruption_test::build(build_config, kRows, crash, [&] {
      at_checkpoint =
          corruption_test::read_bytes(files.nvm, 0, std::filesystem::file_size(files.nvm));
    });
    std::filesystem::copy_file(files.nvm, pristine.nvm);
    if (has_ssd) std::filesystem::copy_file(files.ssd, pristine.ssd);
    const std::vector<std::byte> at_end =
        corruption_test::read_bytes(files.nvm, 0, std::filesystem::file_size(files.nvm));
    corruption_test::NvmFileMap map = corruption_test::map_nvm_file(files.nvm);
    std::vector<SlotId> unchanged, changed;
    for (const SlotId slot : map.occupied) {
      const bool same = std::memcmp(at_checkpoint.data() + map.slot_offset(slot),
                                    at_end.data() + map.slot_offset(slot), kPageSize) == 0;
      (same || !crash ? unchanged : changed).push_back(slot);
    }

    std::vector<Damage> damages;
    if (regions == Regions::kLogHeaderOnly) damages = log_header_damages(files.nvm);
    if (regions == Regions::kPagesChangedSinceCheckpoint && has_nvm_pages)
      damages =
          page_damages("nvm page data, changed since the checkpoint", files.nvm, map, changed);
    if (regions == Regions::kAll) {
      damages = all_but_log_header(files, map, has_ssd);
      if (has_nvm_pages) {
        const std::vector<Damage> pages = page_damages("nvm page data", files.nvm, map, unchanged);
        damages.insert(damages.end(), pages.begin(), pages.end());
        // Restart rewrites these from full-page images, except on nvm-direct (its own test).
        if (architecture != Architecture::kNvmDirect) {
          const std::vector<Damage> more =
              page_damages("nvm page data, changed since the checkpoint", files.nvm, map, changed);
          damages.insert(damages.end(), more.begin(), more.end());
        }
      }
    }
    std::map<std::string, Tally> tallies;
    for (const Damage& damage : damages) {
      const auto overwrite = std::filesystem::copy_options::overwrite_existing;
      std::filesystem::copy_file(pristine.nvm, files.nvm, overwrite);
      if (has_ssd) std::filesystem::copy_file(pristine.ssd, files.ssd, overwrite);
      damage.apply();
      record(tallies[damage.region], damage, run_in_child(open_config));
    }
    print(architecture, crash, tallies);
    return tallies;
  }

  static std::vector<Damage> log_header_damages(const std::string& nvm) {
    const corruption_test::NvmFileMap map = corruption_test::map_nvm_file(nvm);
    std::vector<Damage> damages;
    for (std::uint64_t copy = 0; copy < kLogHeaderCopies; ++copy) {
      const std::uint64_t at = map.layout.log_offset + copy * sizeof(LogHeader);
      for (const std::uint64_t field : {std::uint64_t{0}, std::uint64_t{16}, std::uint64_t{40}})
        damages.push_back({"log header copies",
                           "flip copy " + std::to_string(copy) + " +" + std::to_string(field),
                           [=] { corruption_test::flip_byte(nvm, at + field); }});
      damages.push_back({"log header copies", "zero copy " + std::to_string(copy),
                         [=] { corruption_test::zero_line(nvm, at); }});
    }
    return damages;
  }

  // Up to three of `slots` (first, middle, last), each at a few offsets.
  static std::vector<Damage> page_damages(const std::string& region, const std::string& nvm,
                                          const corruption_test::NvmFileMap& map,
                                          const std::vector<SlotId>& slots) {
    std::vector<Damage> damages;
    if (slots.empty()) return damages;
    for (const std::size_t i : {std::size_t{0}, slots.size() / 2, slots.size() - 1}) {
      const SlotId slot = slots[i];
      for (const std::uint64_t offset :
           {std::uint64_t{8}, std::uint64_t{34}, std::uint64_t{200}, std::uint64_t{9000}}) {
        const std::uint64_t at = map.slot_offset(slot) + offset;
        const std::string where = "slot " + std::to_string(slot) + " +" + std::to_string(offset);
        damages.push_back({region, "flip " + where, [=] { corruption_test::flip_byte(nvm, at); }});
        damages.push_back(
            {region, "zero line " + where, [=] { corruption_test::zero_line(nvm, at); }});
      }
    }
    return damages;
  }

  static std::vector<Damage> all_but_log_header(const DatabaseFiles& files,
                                                const corruption_test::NvmFileMap& map,
                                                bool has_ssd) {
    const std::string nvm = files.nvm;
    const std::string ssd = files.ssd;
    std::vector<Damage> damages;
    auto flip_and_zero = [&](const std::string& region, const std::string& file,
                             std::uint64_t offset, const std::string& where) {
      damages.push_back(
          {region, "flip " + where, [=] { corruption_test::flip_byte(file, offset); }});
      damages.push_back(
          {region, "zero line " + where, [=] { corruption_test::zero_line(file, offset); }});
    };
    auto truncate = [&](const std::string& region, const std::string& file, std::uint64_t size) {
      damages.push_back({region, "truncate to " + std::to_string(size),
                         [=] { std::filesystem::resize_file(file, size); }});
    };
    // The NVM file: superblock, metadata area (catalog, or the SSD generation witness).
    for (const std::uint64_t offset : {std::uint64_t{8}, std::uint64_t{16}, std::uint64_t{48}})
      flip_and_zero("nvm superblock", nvm, offset, "+" + std::to_string(offset));
    truncate("nvm superblock", nvm, 1024);
    flip_and_zero(has_ssd ? "nvm metadata (ssd witness)" : "catalog", nvm, kNvmMetadataOffset + 8,
                  "+8");
    flip_and_zero(has_ssd ? "nvm metadata (ssd witness)" : "catalog", nvm, kNvmMetadataOffset + 20,
                  "+20");
    // Log records: the checkpoint's, and those after it (after a crash: the work to redo).
    const Lsn checkpoint = map.log.checkpoint_lsn;
    for (const std::uint64_t delta :
         {std::uint64_t{0}, std::uint64_t{20}, std::uint64_t{200}, std::uint64_t{3000}})
      flip_and_zero("log records", nvm, map.log_record_offset(checkpoint + delta),
                    "checkpoint +" + std::to_string(delta));
    truncate("log records", nvm, map.layout.log_offset + map.layout.log_bytes / 2);
    // Slot headers in NVM.
    if (!map.occupied.empty()) {
      const std::size_t n = map.occupied.size();
      for (const std::size_t i : {std::size_t{0}, n / 2, n - 1}) {
        const SlotId slot = map.occupied[i];
        const std::string name = "slot " + std::to_string(slot);
        flip_and_zero("nvm slot headers", nvm, map.header_line_offset(slot) + 5, name + " v0");
        damages.push_back({"nvm slot headers", "flip " + name + " v1", [=] {
                             corruption_test::flip_byte(nvm, map.header_line_offset(slot) + 37);
                           }});
      }
      truncate("nvm page data", nvm, map.slot_offset(map.occupied[n / 2]));
    }
    if (!has_ssd) return damages;
    // The SSD file: superblock and bitmap copies, the catalog in the superblock, data pages.
    const corruption_test::SsdFileMap ssd_map = corruption_test::map_ssd_file(ssd);
    for (const unsigned copy : {ssd_map.newest_copy, 1 - ssd_map.newest_copy}) {
      const std::string which = copy == ssd_map.newest_copy ? "newest" : "older";
      flip_and_zero("ssd superblock", ssd, SsdLayout::superblock_offset(copy) + 40, which);
      flip_and_zero("ssd bitmap", ssd, ssd_map.layout.bitmap_offset(copy) + 2, which);
      flip_and_zero("catalog", ssd,
                    SsdLayout::superblock_offset(copy) + Superblock::kMetadataOffset + 8,
                    "ssd " + which);
    }
    truncate("ssd superblock", ssd, 6000);
    const std::size_t pages = ssd_map.allocated.size();
    if (pages > 0) {
      for (const std::size_t i : {std::size_t{0}, pages / 2, pages - 1}) {
        const PageId id = ssd_map.allocated[i];
        for (const std::uint64_t offset : {std::uint64_t{34}, std::uint64_t{5000}})
          flip_and_zero("ssd page data", ssd, ssd_map.layout.page_offset(id) + offset,
                        "page " + std::to_string(id) + " +" + std::to_string(offset));
      }
      truncate("ssd page data", ssd, ssd_map.layout.page_offset(ssd_map.allocated[pages / 2]));
    }
    return damages;
  }

  // The read in a child: a crash or a hang there is an outcome here, not the end of the test.
  enum class Ending { kOutcome, kCrash, kHang };
  struct ChildResult {
    Ending ending;
    ReadBack read;
  };
  static ChildResult run_in_child(const Config& config) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      ::alarm(kTrialSeconds);
      const ReadBack read = corruption_test::read_back(config, kRows);
      const std::string message =
          std::to_string(static_cast<int>(read.outcome)) + " " + read.detail;
      [[maybe_unused]] ssize_t ignored = ::write(fds[1], message.data(), message.size());
      ::_exit(0);
    }
    ::close(fds[1]);
    std::string message;
    char buffer[512];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof(buffer))) > 0;) message.append(buffer, n);
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
      const bool hang = WTERMSIG(status) == SIGALRM;
      return {hang ? Ending::kHang : Ending::kCrash,
              {Outcome::kWrong, std::string("signal ") + strsignal(WTERMSIG(status))}};
    }
    if (message.empty()) return {Ending::kCrash, {Outcome::kWrong, "no outcome reported"}};
    const auto outcome = static_cast<Outcome>(message[0] - '0');
    return {Ending::kOutcome, {outcome, message.substr(2)}};
  }

  static void record(Tally& tally, const Damage& damage, const ChildResult& result) {
    const std::string line = damage.what + ": " + result.read.detail;
    if (result.ending == Ending::kCrash) {
      ++tally.crash;
      tally.failures.push_back("crash, " + line);
    } else if (result.ending == Ending::kHang) {
      ++tally.hang;
      tally.failures.push_back("hang, " + line);
    } else if (result.read.outcome == Outcome::kIntact) {
      ++tally.intact;
    } else if (result.read.outcome == Outcome::kError) {
      ++tally.error;
    } else {
      ++tally.wrong;
      tally.failures.push_back("wrong, " + line);
    }
  }

  static void print(Architecture architecture, bool crash,
                    const std::map<std::string, Tally>& tallies) {
    for (const auto& [region, tally] : tallies)
      std::printf("%-10s %-7s %-28s intact %3d  error %3d  crash %d  hang %d  wrong %d\n",
                  std::string(architecture_name(architecture)).c_str(),
                  crash ? "crashed" : "closed", region.c_str(), tally.intact, tally.error,
                  tally.crash, tally.hang, tally.wrong);
    std::fflush(stdout);
  }

  static void expect_no_failures(const std::map<std::string, Tally>& tallies) {
    for (const auto& [region, tally] : tallies)
      for (const std::string& failure : tally.failures) ADD_FAILURE() << region << ": " << failure;
  }

  void check(Architecture architecture, Regions regions) {
    for (const bool crash : {false, true}) {
      SCOPED_TRACE(crash ? "after a crash" : "after a close");
      expect_no_failures(sweep(architecture, crash, regions));
    }
  }
};

TEST_F(EngineCorruption, ThreeTier) { check(Architecture::kThreeTier, Regions::kAll); }
TEST_F(EngineCorruption, BasicNvm) { check(Architecture::kBasicNvm, Regions::kAll); }
TEST_F(EngineCorruption, NvmDirect) { check(Architecture::kNvmDirect, Regions::kAll); }
TEST_F(EngineCorruption, SsdBm) { check(Architecture::kSsdBm, Regions::kAll); }

// Known limit: nvm-direct changes pages in place and renews their checksums at checkpoints;
// after a crash, restart cannot check the pages changed since (the log names them), so
// damage there can give wrong rows.
TEST_F(EngineCorruption, DISABLED_NvmDirectPagesChangedSinceTheCheckpointAfterACrash) {
  expect_no_failures(sweep(Architecture::kNvmDirect, true, Regions::kPagesChangedSinceCheckpoint));
}

// A damaged log header copy, after a close and after a crash (when the other copy is a header
// write behind): every committed row, or an Error.
TEST_F(EngineCorruption, LogHeaderCopies) {
  for (const Architecture architecture : {Architecture::kThreeTier, Architecture::kBasicNvm,
                                          Architecture::kNvmDirect, Architecture::kSsdBm}) {
    SCOPED_TRACE(std::string(architecture_name(architecture)));
    check(architecture, Regions::kLogHeaderOnly);
  }
}

}  // namespace
}  // namespace tristore
