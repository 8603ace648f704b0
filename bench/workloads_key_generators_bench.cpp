// Cost of choosing a key, which every YCSB operation pays before touching the engine: it
// should stay far below an operation's cost (~0.3-2 us).
#include <benchmark/benchmark.h>

#include "workloads/key_chooser.hpp"
#include "workloads/random.hpp"

namespace {

using tristore::KeyChooser;
using tristore::KeyDistribution;

void choose_keys(benchmark::State& state, KeyDistribution distribution) {
  const auto records = static_cast<std::uint64_t>(state.range(0));
  const KeyChooser chooser(distribution, records, 1.0, 42);
  tristore::Random random(7);
  for (auto _ : state) benchmark::DoNotOptimize(chooser.next(random));
  state.SetItemsProcessed(state.iterations());
}

void BM_ZipfPermutedKey(benchmark::State& state) { choose_keys(state, KeyDistribution::kZipf); }
void BM_ScrambledZipfKey(benchmark::State& state) {
  choose_keys(state, KeyDistribution::kScrambledZipf);
}
void BM_UniformKey(benchmark::State& state) { choose_keys(state, KeyDistribution::kUniform); }

BENCHMARK(BM_ZipfPermutedKey)->Arg(1'000'000)->Arg(100'000'000);
BENCHMARK(BM_ScrambledZipfKey)->Arg(1'000'000)->Arg(100'000'000);
BENCHMARK(BM_UniformKey)->Arg(1'000'000);

}  // namespace

BENCHMARK_MAIN();
