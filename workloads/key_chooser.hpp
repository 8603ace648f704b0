#pragma once
// Which record an operation touches: the --distribution flag made into one call.
#include <cstdint>
#include <string_view>

#include "workloads/key_permutation.hpp"
#include "workloads/random.hpp"
#include "workloads/scrambled_zipf_generator.hpp"
#include "workloads/zipf_generator.hpp"

namespace tristore {

enum class KeyDistribution { kZipf, kUniform, kScrambledZipf };

std::string_view distribution_name(KeyDistribution distribution);  // the flag's spelling
KeyDistribution parse_distribution(std::string_view name);         // Error on an unknown name

class KeyChooser {
 public:
  // Keys in [0, n). theta applies to kZipf only (scrambled Zipf is YCSB's, theta 0.99).
  KeyChooser(KeyDistribution distribution, std::uint64_t n, double theta, std::uint64_t seed)
      : distribution_(distribution),
        n_(n),
        zipf_(n, distribution == KeyDistribution::kZipf ? theta : 0.0),
        scrambled_(n),
        permutation_(n, seed) {}

  std::uint64_t next(Random& random) const {
    switch (distribution_) {
      case KeyDistribution::kZipf:
        return permutation_(zipf_.next(random));
      case KeyDistribution::kScrambledZipf:
        return scrambled_.next(random);
      case KeyDistribution::kUniform:
        break;
    }
    return random.next_below(n_);
  }

  KeyDistribution distribution() const { return distribution_; }
  // The skew in effect: theta for kZipf, 0.99 for kScrambledZipf, 0 for kUniform.
  double effective_theta() const;

 private:
  KeyDistribution distribution_;
  std::uint64_t n_;
  ZipfGenerator zipf_;
  ScrambledZipfGenerator scrambled_;
  KeyPermutation permutation_;
};

}  // namespace tristore
