#include "workloads/key_chooser.hpp"

#include "common/error.hpp"

namespace tristore {

std::string_view distribution_name(KeyDistribution distribution) {
  switch (distribution) {
    case KeyDistribution::kZipf:
      return "zipf";
    case KeyDistribution::kUniform:
      return "uniform";
    case KeyDistribution::kScrambledZipf:
      return "scrambled-zipf";
  }
  return "unknown";
}

KeyDistribution parse_distribution(std::string_view name) {
  for (auto distribution :
       {KeyDistribution::kZipf, KeyDistribution::kUniform, KeyDistribution::kScrambledZipf})
    if (distribution_name(distribution) == name) return distribution;
  fail("unknown distribution '{}' (expected zipf, uniform or scrambled-zipf)", name);
}

double KeyChooser::effective_theta() const {
  switch (distribution_) {
    case KeyDistribution::kZipf:
      return zipf_.theta();
    case KeyDistribution::kScrambledZipf:
      return ScrambledZipfGenerator::kTheta;
    case KeyDistribution::kUniform:
      break;
  }
  return 0.0;
}

}  // namespace tristore
