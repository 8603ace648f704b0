#pragma once
// Reads that race with writes by design, left out of ThreadSanitizer's checks while an object
// of this type lives (its checks of every write stay): the tries of optimistic reads
// (tiers/resident_writes.hpp), inner nodes read beside leaf splits (btree/btree.hpp), and the
// crash simulator's copies of memory as a power failure finds it
// (emulation/crash_simulator.cpp). Nothing in other builds.
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

// The same where `racing`: reads that race with writes only in some uses (a B-tree's inner
// nodes, read beside leaf splits: btree/btree.hpp).
class IgnoringRacingReadsIf {
 public:
#if defined(__SANITIZE_THREAD__)
  explicit IgnoringRacingReadsIf(bool racing) : racing_(racing) {
    if (racing_) AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
  }
  ~IgnoringRacingReadsIf() {
    if (racing_) AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
  }
#else
  explicit IgnoringRacingReadsIf(bool) {}
#endif
  IgnoringRacingReadsIf(const IgnoringRacingReadsIf&) = delete;
  IgnoringRacingReadsIf& operator=(const IgnoringRacingReadsIf&) = delete;

#if defined(__SANITIZE_THREAD__)
 private:
  bool racing_;
#endif
};

}  // namespace tristore
