#pragma once
// Reads that race with writes by design, left out of ThreadSanitizer's checks while an object
// of this type lives (its checks of every write stay): the tries of optimistic reads
// (tiers/resident_writes.hpp), and the crash simulator's copies of memory as a power failure
// finds it (emulation/crash_simulator.cpp). Nothing in other builds.
#if defined(__SANITIZE_THREAD__)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#endif

namespace tristore {

struct IgnoringRacingReads {
#if defined(__SANITIZE_THREAD__)
  IgnoringRacingReads() { AnnotateIgnoreReadsBegin(__FILE__, __LINE__); }
  ~IgnoringRacingReads() { AnnotateIgnoreReadsEnd(__FILE__, __LINE__); }
#else
  IgnoringRacingReads() = default;
#endif
  IgnoringRacingReads(const IgnoringRacingReads&) = delete;
  IgnoringRacingReads& operator=(const IgnoringRacingReads&) = delete;
};

}  // namespace tristore
