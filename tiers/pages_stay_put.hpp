#pragma once
// The PageAccess members that create, move or free pages, for the accesses that only read or
// change entries of pages where they are (resident_reads.hpp, resident_writes.hpp,
// nvm_direct_writes.hpp, main_memory_writes.hpp). They exist for the concept; the B-tree never
// reaches them (it refuses a structure change first), and each throws std::logic_error naming the
// access.
//
//   class ResidentReads : public PagesStayPut<ResidentReads> {
//     static constexpr const char* kName = "ResidentReads";  // what the error names
//     ...
// Guard is looked up in Derived only when a member is called: Derived is complete then.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tiers/swip.hpp"

namespace tristore {

template <typename Derived>
class PagesStayPut {
 public:
  template <typename D = Derived>
  [[noreturn]] typename D::Guard allocate_page() {
    refuse<D>("allocate_page");
  }
  template <typename D = Derived>
  [[noreturn]] void move_swips(typename D::Guard&, std::uint32_t, typename D::Guard*, Swip*,
                               std::uint32_t) {
    refuse<D>("move_swips");
  }
  template <typename D = Derived>
  [[noreturn]] Swip swip_of(const typename D::Guard&) {
    refuse<D>("swip_of");
  }
  template <typename D = Derived>
  [[noreturn]] void free_page(typename D::Guard&&) {
    refuse<D>("free_page");
  }

 protected:
  template <typename D = Derived>
  [[noreturn]] static void refuse(const char* what) {
    throw std::logic_error(std::string(D::kName) + "::" + what + " must never be reached");
  }
};

}  // namespace tristore
