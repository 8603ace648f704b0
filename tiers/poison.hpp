#pragma once
// Debug-mode poisoning of DRAM bytes that hold no valid page content (non-resident lines of a
// full frame, unused mini-page slots, free frames), so that a read of a line that was never
// made resident is reported where it happens. TRISTORE_POISON builds poison for
// AddressSanitizer; TRISTORE_VALGRIND builds mark the bytes no-access with memcheck client
// requests, for a run under valgrind (ASan and valgrind cannot be combined). Other builds
// compile these calls away.
#include <cstddef>

#if defined(TRISTORE_POISON)
#include <sanitizer/asan_interface.h>
#endif
#if defined(TRISTORE_VALGRIND)
#include <valgrind/memcheck.h>
#endif

namespace tristore {

inline void poison_bytes([[maybe_unused]] void* p, [[maybe_unused]] std::size_t length) {
#if defined(TRISTORE_POISON)
  ASAN_POISON_MEMORY_REGION(p, length);
#endif
#if defined(TRISTORE_VALGRIND)
  (void)VALGRIND_MAKE_MEM_NOACCESS(p, length);
#endif
}

// The bytes become writable; their content is undefined until written.
inline void unpoison_bytes([[maybe_unused]] void* p, [[maybe_unused]] std::size_t length) {
#if defined(TRISTORE_POISON)
  ASAN_UNPOISON_MEMORY_REGION(p, length);
#endif
#if defined(TRISTORE_VALGRIND)
  (void)VALGRIND_MAKE_MEM_UNDEFINED(p, length);
#endif
}

}  // namespace tristore
