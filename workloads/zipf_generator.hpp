#pragma once
// Zipf-distributed ranks: P(rank r) proportional to 1 / (r + 1)^theta for r in [0, n).
//
// Sampled by rejection-inversion (Hormann and Derflinger 1996): O(1) time and memory per draw for
// any theta >= 0, including the paper's theta = 1 where the Gray et al. formula used by YCSB
// divides by zero. Rank 0 is the most popular; map ranks to keys with KeyPermutation so that
// popular keys are not clustered.
#include <cmath>
#include <cstdint>

#include "workloads/random.hpp"

namespace tristore {

class ZipfGenerator {
 public:
  ZipfGenerator(std::uint64_t n, double theta);  // Error unless n >= 1 and theta >= 0

  std::uint64_t next(Random& random) const {
    for (;;) {
      const double u = h_integral_n_ + random.next_double() * (h_integral_x1_ - h_integral_n_);
      const double x = h_integral_inverse(u);
      double k = std::floor(x + 0.5);
      if (k < 1) k = 1;
      if (k > n_) k = n_;
      // Accept at once inside the squeeze region, else test against the exact hat.
      if (k - x <= squeeze_ || u >= h_integral(k + 0.5) - h(k))
        return static_cast<std::uint64_t>(k) - 1;
    }
  }

  std::uint64_t size() const { return static_cast<std::uint64_t>(n_); }
  double theta() const { return theta_; }

 private:
  // h(x) = x^-theta; H(x) = integral of h from 1 to x, written with expm1/log1p so that it is
  // exact at theta = 1 (where H = log).
  double h(double x) const { return std::exp(-theta_ * std::log(x)); }
  double h_integral(double x) const {
    const double log_x = std::log(x);
    return expm1_over_x((1.0 - theta_) * log_x) * log_x;
  }
  double h_integral_inverse(double y) const {
    double t = y * (1.0 - theta_);
    if (t < -1.0) t = -1.0;
    return std::exp(log1p_over_x(t) * y);
  }
  static double expm1_over_x(double x) {
    return std::abs(x) > 1e-8 ? std::expm1(x) / x : 1.0 + x / 2;
  }
  static double log1p_over_x(double x) {
    return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x / 2;
  }

  double n_;
  double theta_;
  double h_integral_x1_;
  double h_integral_n_;
  double squeeze_;
};

}  // namespace tristore
