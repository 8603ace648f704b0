#include "workloads/ycsb_workload.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "engine/table.hpp"
#include "workloads/random.hpp"
#include "workloads/size_parser.hpp"
#include "workloads/tree_size_estimate.hpp"
#include "workloads/ycsb_record.hpp"

namespace tristore {

namespace {

// How one table layout loads, reads, updates and scans; the two layouts differ only here.
struct FullRowOps {
  using Key = YcsbKey;
  using Value = YcsbRow;
  static void generate(std::size_t index, Key& key, Value& row) {
    key = static_cast<Key>(index);
    for (std::size_t field = 0; field < kYcsbFieldCount; ++field)
      std::memset(row.fields.data() + field * kYcsbFieldSize, ycsb_loaded_byte(index, field),
                  kYcsbFieldSize);
  }
  static bool check_loaded(Table<Key, Value>& table, std::uint64_t key) {
    char field[kYcsbFieldSize];
    const std::size_t which = key % kYcsbFieldCount;
    if (!table.get_part(static_cast<Key>(key), which * kYcsbFieldSize, kYcsbFieldSize, field))
      return false;
    for (char c : field)
      if (c != ycsb_loaded_byte(key, which)) return false;
    return true;
  }
};

struct MicroOps {
  using Key = YcsbMicroKey;
  using Value = YcsbMicroValue;
  static void generate(std::size_t index, Key& key, Value& value) {
    key = index;
    value = ycsb_micro_loaded_value(index);
  }
  static bool check_loaded(Table<Key, Value>& table, std::uint64_t key) {
    Value value = 0;
    return table.get(key, value) && value == ycsb_micro_loaded_value(key);
  }
};

template <typename Layout>
class YcsbRunner {
 public:
  using Key = typename Layout::Key;
  using Value = typename Layout::Value;

  // create: a new table (load() next); otherwise the existing one of a reopened database.
  // threads: workers sharing the table and the key distribution, each with its own random
  // stream (worker 0's is the one-thread run's).
  YcsbRunner(Database& db, const YcsbOptions& options, bool create = true, unsigned threads = 1)
      : db_(db),
        options_(options),
        table_(create ? db.create_table<Key, Value>("usertable")
                      : db.open_table<Key, Value>("usertable")),
        keys_(options.distribution, options.records, options.zipf_theta, options.seed) {
    for (unsigned t = 0; t < threads; ++t)
      workers_.emplace_back(options.seed ^ (create ? 0x5eedULL : 0x5eed2ULL) ^
                            (t * 0x9E3779B97F4A7C15ULL));
  }

  YcsbResult run(PhaseLimit warmup, PhaseLimit measured, const ProgressPrinter& progress,
                 const std::function<void()>& before_measured) {
    const auto threads = static_cast<unsigned>(workers_.size());
    const auto operation = [this](unsigned thread) { one_operation(workers_[thread]); };
    YcsbResult result;
    result.effective_theta = keys_.effective_theta();
    result.load = load(progress);
    result.memory_after_load = db_.memory_usage();
    result.warmup = run_phase(db_, "warmup", warmup, progress, threads, operation);
    for (Worker& worker : workers_) worker.tallies = Tallies{};
    if (before_measured) before_measured();
    result.measured = run_phase(db_, "run", measured, progress, threads, operation);
    for (const Worker& worker : workers_) {
      result.lookups += worker.tallies.lookups;
      result.updates += worker.tallies.updates;
      result.scans += worker.tallies.scans;
      result.scanned_records += worker.tallies.scanned_records;
      result.not_found += worker.tallies.not_found;
    }
    return result;
  }

  void one_operation(unsigned thread) { one_operation(workers_[thread]); }
  std::uint64_t not_found() const {
    std::uint64_t sum = 0;
    for (const Worker& worker : workers_) sum += worker.tallies.not_found;
    return sum;
  }

  PhaseResult load(const ProgressPrinter& progress) {
    // 1. Bulk-load keys 0..records-1 in order at the configured fill factor.
    const std::uint64_t estimate =
        estimated_tree_bytes(options_.records, sizeof(Key), sizeof(Value), options_.fill_factor);
    progress.message(fmt::format("loading {} records ({}-byte keys, {}-byte values, about {})",
                                 options_.records, sizeof(Key), sizeof(Value),
                                 human_size(estimate)));
    const Counters before = db_.counters();
    const auto start = std::chrono::steady_clock::now();
    table_.bulk_load(
        options_.records,
        [](std::size_t index, Key& key, Value& value) { Layout::generate(index, key, value); },
        options_.fill_factor);

    // 2. Spot-check the first, middle and last record: a run on a broken load means nothing.
    for (std::uint64_t key : {std::uint64_t{0}, options_.records / 2, options_.records - 1})
      if (!Layout::check_loaded(table_, key))
        fail("ycsb: record {} is missing or wrong right after loading", key);

    PhaseResult result;
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.ops = options_.records;
    result.counters = db_.counters() - before;
    progress.message(
        fmt::format("loaded {} records in {:.2f} s", options_.records, result.seconds));
    return result;
  }

 private:
  struct Tallies {
    std::uint64_t lookups = 0;
    std::uint64_t updates = 0;
    std::uint64_t scans = 0;
    std::uint64_t scanned_records = 0;
    std::uint64_t not_found = 0;
  };
  // What one thread of the run owns, on cache lines of its own.
  struct alignas(64) Worker {
    explicit Worker(std::uint64_t seed) : random(seed) {}
    Random random;
    Tallies tallies;
    char field_buffer[kYcsbFieldSize];
  };

  void one_operation(Worker& worker) {
    const std::uint64_t key = keys_.next(worker.random);
    switch (options_.kind) {
      case YcsbKind::kReadOnly:
        lookup(worker, key);
        return;
      case YcsbKind::kReadWrite:
        if (worker.random.next_double() * 100.0 < options_.update_ratio_percent)
          update(worker, key);
        else
          lookup(worker, key);
        return;
      case YcsbKind::kScan:
        scan(worker, key);
        return;
    }
  }

  void lookup(Worker& worker, std::uint64_t key) {
    ++worker.tallies.lookups;
    bool found;
    if constexpr (std::is_same_v<Layout, FullRowOps>) {
      const std::size_t field = worker.random.next_below(kYcsbFieldCount);
      found = table_.get_part(static_cast<Key>(key), field * kYcsbFieldSize, kYcsbFieldSize,
                              worker.field_buffer);
    } else {
      Value value;
      found = table_.get(key, value);
    }
    worker.tallies.not_found += !found;
  }

  void update(Worker& worker, std::uint64_t key) {
    ++worker.tallies.updates;
    bool found;
    if constexpr (std::is_same_v<Layout, FullRowOps>) {
      const std::size_t field = worker.random.next_below(kYcsbFieldCount);
      std::memset(worker.field_buffer, static_cast<char>('A' + worker.tallies.updates % 26),
                  kYcsbFieldSize);
      found = table_.update_part(static_cast<Key>(key), field * kYcsbFieldSize, kYcsbFieldSize,
                                 worker.field_buffer);
    } else {
      found = table_.update(key, worker.random.next());
    }
    worker.tallies.not_found += !found;
  }

  void scan(Worker& worker, std::uint64_t key) {
    ++worker.tallies.scans;
    std::size_t length = worker.random.next_between(1, options_.max_scan_length);
    const std::size_t field = worker.random.next_below(kYcsbFieldCount);
    if (options_.full_scan) {
      key = 0;
      length = options_.records;
    }
    worker.tallies.scanned_records += table_.scan(
        static_cast<Key>(key), length, [&worker, field](const Key&, const Value& value) {
          if constexpr (std::is_same_v<Layout, FullRowOps>)
            std::memcpy(worker.field_buffer, value.fields.data() + field * kYcsbFieldSize,
                        kYcsbFieldSize);
          else
            std::memcpy(worker.field_buffer, &value, sizeof(value));
          return true;
        });
  }

  Database& db_;
  YcsbOptions options_;
  Table<Key, Value> table_;
  KeyChooser keys_;
  std::vector<Worker> workers_;
};

template <typename Layout>
class YcsbSessionOver final : public YcsbSession {
 public:
  YcsbSessionOver(Database& db, const YcsbOptions& options, bool create, unsigned threads)
      : runner_(db, options, create, threads) {}
  PhaseResult load(const ProgressPrinter& progress) override { return runner_.load(progress); }
  void run_one(unsigned thread) override { runner_.one_operation(thread); }
  std::uint64_t not_found() const override { return runner_.not_found(); }

 private:
  YcsbRunner<Layout> runner_;
};

std::unique_ptr<YcsbSession> make_session(Database& db, const YcsbOptions& options, bool create,
                                          unsigned threads) {
  if (threads == 0) fail("ycsb: at least one thread must run");
  if (options.micro)
    return std::make_unique<YcsbSessionOver<MicroOps>>(db, options, create, threads);
  return std::make_unique<YcsbSessionOver<FullRowOps>>(db, options, create, threads);
}

}  // namespace

std::string_view ycsb_kind_name(YcsbKind kind) {
  switch (kind) {
    case YcsbKind::kReadOnly:
      return "ycsb-ro";
    case YcsbKind::kReadWrite:
      return "ycsb-rw";
    case YcsbKind::kScan:
      return "ycsb-scan";
  }
  return "unknown";
}

YcsbResult run_ycsb(Database& db, const YcsbOptions& options, PhaseLimit warmup,
                    PhaseLimit measured, const ProgressPrinter& progress, unsigned threads,
                    const std::function<void()>& before_measured) {
  // 1. Refuse what cannot be a YCSB table.
  if (options.records == 0) fail("ycsb: --records must be at least 1");
  if (!options.micro && options.records > (std::uint64_t{1} << 32))
    fail("ycsb: --records {} exceeds the 4-byte key space (use --micro for 8-byte keys)",
         options.records);
  if (options.max_scan_length == 0) fail("ycsb: the maximum scan length must be at least 1");

  // 2. Run on the layout the options select.
  if (threads == 0) fail("ycsb: at least one thread must run");
  if (options.micro)
    return YcsbRunner<MicroOps>(db, options, true, threads)
        .run(warmup, measured, progress, before_measured);
  return YcsbRunner<FullRowOps>(db, options, true, threads)
      .run(warmup, measured, progress, before_measured);
}

std::unique_ptr<YcsbSession> YcsbSession::create(Database& db, const YcsbOptions& options,
                                                 unsigned threads) {
  return make_session(db, options, true, threads);
}

std::unique_ptr<YcsbSession> YcsbSession::open(Database& db, const YcsbOptions& options,
                                               unsigned threads) {
  return make_session(db, options, false, threads);
}

}  // namespace tristore
