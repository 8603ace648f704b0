#pragma once
// The JSON result of a tristore-bench run (docs/design.md section 9).
#include <nlohmann/json.hpp>

#include "common/counters.hpp"
#include "engine/database.hpp"
#include "workloads/bench_options.hpp"
#include "workloads/bench_phase.hpp"

namespace tristore {

nlohmann::json counters_json(const Counters& counters);  // every counter, by its field name
nlohmann::json memory_json(const MemoryUsage& memory);
// Per operation (per transaction in TPC-C): log bytes and records; NVM lines written to the
// data area (nvm_lines_written less the log area's).
nlohmann::json derived_json(const PhaseResult& phase);
nlohmann::json phase_json(const PhaseResult& phase);  // seconds, ops, ops_s, counters, derived
// The measured phase at the top of a result: ops, seconds, throughput_ops_s (all threads),
// ops_by_thread, throughput_by_thread_ops_s, counters, derived.
void add_measured_json(nlohmann::json& result, const PhaseResult& measured);
nlohmann::json config_json(const BenchOptions& options);  // every effective setting

// The B-tree's size after loading: the tier that holds every page of the architecture has the
// most bytes in use (DRAM for main-memory, NVM for nvm-direct and basic-nvm, SSD otherwise).
std::uint64_t tree_bytes(const MemoryUsage& memory);

// Peak resident set of this process, in bytes (getrusage).
std::uint64_t peak_rss_bytes();

}  // namespace tristore
