#pragma once
// YCSB's ScrambledZipfianGenerator: Gray et al.'s Zipfian over 10^10 items with theta 0.99 and
// YCSB's precomputed zeta, each value hashed with FNV-64 and folded into [0, n). Popular items
// are scattered, and the skew is YCSB's (milder than theta = 0.99 over n items, as the fold
// merges many ranks). Kept to reproduce YCSB numbers exactly.
#include <cmath>
#include <cstdint>

#include "workloads/fnv_hash.hpp"
#include "workloads/random.hpp"

namespace tristore {

// zeta(n, theta) = sum over i in [1, n] of 1 / i^theta.
double zeta(std::uint64_t n, double theta);

// Gray et al.'s Zipfian generator as YCSB writes it (ZipfianGenerator), values in [0, items).
class GrayZipfianGenerator {
 public:
  GrayZipfianGenerator(std::uint64_t items, double theta, double zeta_n);

  std::uint64_t next(Random& random) const {
    const double u = random.next_double();
    const double uz = u * zeta_n_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + half_pow_theta_) return 1;
    return static_cast<std::uint64_t>(items_ * std::pow(eta_ * u - eta_ + 1.0, alpha_));
  }

 private:
  double items_;
  double zeta_n_;
  double half_pow_theta_;
  double alpha_;
  double eta_;
};

class ScrambledZipfGenerator {
 public:
  static constexpr std::uint64_t kItemCount = 10'000'000'000ULL;  // YCSB's ITEM_COUNT
  static constexpr double kTheta = 0.99;                          // YCSB's ZIPFIAN_CONSTANT
  static constexpr double kZetaItemCount = 26.46902820178302;     // zeta(kItemCount, kTheta)

  explicit ScrambledZipfGenerator(std::uint64_t n);  // Error unless n >= 1

  std::uint64_t next(Random& random) const {
    const auto value = static_cast<std::int64_t>(zipfian_.next(random));
    return static_cast<std::uint64_t>(fnv_hash64(value)) % n_;
  }

 private:
  std::uint64_t n_;
  GrayZipfianGenerator zipfian_;
};

}  // namespace tristore
