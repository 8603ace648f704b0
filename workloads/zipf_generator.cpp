#include "workloads/zipf_generator.hpp"

#include "common/error.hpp"

namespace tristore {

ZipfGenerator::ZipfGenerator(std::uint64_t n, double theta)
    : n_(static_cast<double>(n)), theta_(theta) {
  if (n == 0) fail("zipf: the number of items must be at least 1");
  if (!(theta >= 0.0) || !std::isfinite(theta))
    fail("zipf: theta must be a finite number >= 0, not {}", theta);
  h_integral_x1_ = h_integral(1.5) - 1.0;
  h_integral_n_ = h_integral(n_ + 0.5);
  squeeze_ = 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0));
}

}  // namespace tristore
