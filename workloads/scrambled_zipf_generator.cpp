#include "workloads/scrambled_zipf_generator.hpp"

#include "common/error.hpp"

namespace tristore {

double zeta(std::uint64_t n, double theta) {
  double sum = 0;
  for (std::uint64_t i = 1; i <= n; ++i) sum += 1.0 / std::pow(static_cast<double>(i), theta);
  return sum;
}

GrayZipfianGenerator::GrayZipfianGenerator(std::uint64_t items, double theta, double zeta_n)
    : items_(static_cast<double>(items)),
      zeta_n_(zeta_n),
      half_pow_theta_(std::pow(0.5, theta)),
      alpha_(1.0 / (1.0 - theta)),
      eta_((1.0 - std::pow(2.0 / static_cast<double>(items), 1.0 - theta)) /
           (1.0 - zeta(2, theta) / zeta_n)) {
  if (items < 2) fail("zipfian: needs at least 2 items, not {}", items);
  if (!(theta > 0.0 && theta < 1.0)) fail("zipfian: theta must lie in (0, 1), not {}", theta);
}

ScrambledZipfGenerator::ScrambledZipfGenerator(std::uint64_t n)
    : n_(n), zipfian_(kItemCount, kTheta, kZetaItemCount) {
  if (n == 0) fail("scrambled zipf: the number of items must be at least 1");
}

}  // namespace tristore
