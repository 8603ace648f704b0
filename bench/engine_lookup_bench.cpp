// Point lookups of uniformly random keys, per architecture, on a data set that fits DRAM
// (1M 8-byte keys with 8-byte values, bulk loaded at 0.66): the cost of each architecture's
// page access when no tier below DRAM is involved. 3tier should be within 10 % of main-memory.
//
//   build-h4-rel/bench/engine_lookup_bench --benchmark_min_time=2
//   build-h4-rel/bench/engine_lookup_bench --benchmark_filter=lookup_ratio   (the 0.9x target)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "engine/database.hpp"
#include "engine/table.hpp"

using namespace tristore;

namespace {

constexpr std::uint64_t kRecords = 1'000'000;

struct OpenDatabase {
  std::string nvm_path;
  std::filesystem::path ssd_dir;
  std::unique_ptr<Database> db;
  std::unique_ptr<Table<std::uint64_t, std::uint64_t>> table;
  ~OpenDatabase() {
    table.reset();
    db.reset();
    std::remove(nvm_path.c_str());
    if (!ssd_dir.empty()) std::filesystem::remove_all(ssd_dir);
  }
};

std::unique_ptr<OpenDatabase> open_loaded(Architecture arch, const std::string& tag) {
  auto fresh = std::make_unique<OpenDatabase>();
  char tmpl[] = "/tmp/tristore-bench-XXXXXX";
  fresh->ssd_dir = ::mkdtemp(tmpl);
  fresh->nvm_path = "/dev/shm/tristore-bench-" + std::to_string(::getpid()) + tag + ".nvm";
  Config config;
  config.architecture = arch;
  config.dram_bytes = 256 * kMiB;
  config.nvm_bytes = 256 * kMiB;
  config.ssd_bytes = 256 * kMiB;
  config.nvm_path = fresh->nvm_path;
  config.ssd_path = (fresh->ssd_dir / "bench.ssd").string();
  config.open_mode = OpenMode::kCreateReplacing;
  fresh->db = Database::open(config);
  fresh->table = std::make_unique<Table<std::uint64_t, std::uint64_t>>(
      fresh->db->create_table<std::uint64_t, std::uint64_t>("bench"));
  fresh->table->bulk_load(kRecords, [](std::size_t i, std::uint64_t& k, std::uint64_t& v) {
    k = i;
    v = i * 3;
  });
  // Warm-up to the steady state of a data set that fits DRAM: the checkpoint after a bulk
  // load may have written every page down to NVM, so a full scan brings the leaves back whole
  // and one lookup per key brings back the inner nodes (a root of a few lines stays a mini page,
  // which swizzles no children: one page-table lookup per operation remains).
  fresh->table->scan(0, kRecords, [](const std::uint64_t&, const std::uint64_t&) { return true; });
  std::uint64_t v = 0;
  for (std::uint64_t k = 0; k < kRecords; ++k) fresh->table->get(k, v);
  return fresh;
}

OpenDatabase& database(Architecture arch) {
  static std::map<Architecture, std::unique_ptr<OpenDatabase>> open;
  auto& slot = open[arch];
  if (slot) return *slot;
  // Only one database at a time: the previous one's memory is given back first.
  open.clear();
  open[arch] = open_loaded(arch, "");
  return *open[arch];
}

double thread_cpu_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// main-memory and 3tier open side by side, measured in alternating batches of lookups of the
// same keys, by this thread's CPU time: on a loaded machine both suffer the same disturbance.
// Reports the median over batch pairs of main-memory time / 3tier time (1.0 = as fast).
void lookup_ratio(benchmark::State& state) {
  auto main_memory = open_loaded(Architecture::kMainMemory, "-mm");
  auto three_tier = open_loaded(Architecture::kThreeTier, "-3t");
  std::mt19937_64 rng(42);
  std::vector<std::uint64_t> keys(100000);
  std::vector<double> ratios;
  std::uint64_t v = 0, sum = 0;
  for (auto _ : state) {
    for (auto& k : keys) k = rng() % kRecords;
    double t0 = thread_cpu_ns();
    for (std::uint64_t k : keys) sum += main_memory->table->get(k, v) ? v : 0;
    double t1 = thread_cpu_ns();
    for (std::uint64_t k : keys) sum += three_tier->table->get(k, v) ? v : 0;
    double t2 = thread_cpu_ns();
    ratios.push_back((t1 - t0) / (t2 - t1));
  }
  benchmark::DoNotOptimize(sum);
  std::sort(ratios.begin(), ratios.end());
  state.counters["3tier_vs_main_memory"] = ratios[ratios.size() / 2];
  state.counters["p10"] = ratios[ratios.size() / 10];
  state.counters["p90"] = ratios[ratios.size() * 9 / 10];
}

void lookup(benchmark::State& state, Architecture arch) {
  OpenDatabase& open = database(arch);
  std::mt19937_64 rng(42);
  std::vector<std::uint64_t> keys(1 << 20);
  for (auto& k : keys) k = rng() % kRecords;
  std::uint64_t sum = 0, v = 0;
  Counters before = open.db->counters();
  std::size_t i = 0;
  for (auto _ : state) {
    open.table->get(keys[i++ & (keys.size() - 1)], v);
    sum += v;
  }
  benchmark::DoNotOptimize(sum);
  Counters delta = open.db->counters() - before;
  state.SetItemsProcessed(state.iterations());
  state.counters["nvm_lines_read/op"] =
      static_cast<double>(delta.nvm_lines_read) / static_cast<double>(state.iterations());
  state.counters["page_table_lookups/op"] =
      static_cast<double>(delta.page_table_lookups) / static_cast<double>(state.iterations());
}

}  // namespace

BENCHMARK_CAPTURE(lookup, main_memory, Architecture::kMainMemory);
BENCHMARK_CAPTURE(lookup, three_tier, Architecture::kThreeTier);
BENCHMARK_CAPTURE(lookup, basic_nvm, Architecture::kBasicNvm);
BENCHMARK_CAPTURE(lookup, ssd_bm, Architecture::kSsdBm);
BENCHMARK_CAPTURE(lookup, nvm_direct, Architecture::kNvmDirect);

BENCHMARK(lookup_ratio)->Iterations(100)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
