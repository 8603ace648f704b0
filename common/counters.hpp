#pragma once
// Event counters, always on. Each tier owns one Counters and bumps plain integers under the
// latch that serialises its changes (counts of reads beside each other are kept per thread);
// the engine adds them up. They are the deterministic part
// of every comparison between architectures.
#include <cstdint>

namespace tristore {

#define TRISTORE_COUNTERS(X)                                                                   \
  X(nvm_lines_read)                 /* cache lines loaded from NVM (or charged, nvm-direct) */ \
  X(nvm_lines_written)              /* cache lines written to NVM, log area included */        \
  X(nvm_log_lines_written)          /* of those, in the log area (records, header) */          \
  X(nvm_double_write_lines_written) /* of those, staged in the double-write area */            \
  X(ssd_pages_read)                                                                            \
  X(ssd_pages_written)                                                                         \
  X(ssd_syncs)              /* SSD file syncs (the writes before one are durable) */           \
  X(ssd_reads_queued)       /* SSD page reads served by a write still queued behind */         \
  X(ssd_write_behind_waits) /* writes behind that waited for a free buffer */                  \
  X(page_table_lookups)     /* fixes that went through the combined page table */              \
  X(swizzled_hits)          /* fixes served by a swizzled swip: no lookup */                   \
  X(mini_pages_created)                                                                        \
  X(mini_page_promotions)                                                                      \
  X(mini_page_copies)      /* mini pages replaced by a larger copy, readers beside */          \
  X(reader_misses)         /* misses of readers sharing the latch, under the miss latch */     \
  X(reader_retries)        /* such reads run again exclusive: no frame free yet */             \
  X(reader_appends)        /* misses served by appending lines beside others, changers' too */ \
  X(reader_load_waits)     /* such misses that waited for another's read of the page whole */  \
  X(changer_misses)        /* pages loaded or swizzled for changes beside others */            \
  X(miss_latch_holds)      /* the miss latch taken beside others: misses, splits beside */     \
  X(miss_latch_waits)      /* of those, the times it was held by another thread */             \
  X(changes_beside)        /* reads and changes in transactions served beside each other */    \
  X(changes_retried)       /* such operations that needed more, run again exclusively */       \
  X(structure_retried)     /* of those, ones that would split, merge or make a new root */     \
  X(splits_beside)         /* leaves split beside the changes (not nvm-direct) */              \
  X(leaf_reads_retried)    /* optimistic leaf reads beside changes that a change spoilt */     \
  X(undo_steps_beside)     /* undo steps of aborts served beside changes */                    \
  X(undo_steps_retried)    /* such steps that needed more: the abort went on exclusively */    \
  X(nvm_admissions)        /* DRAM evictions admitted to NVM */                                \
  X(nvm_admissions_denied) /* DRAM evictions sent to SSD instead */                            \
  X(dram_evictions)                                                                            \
  X(nvm_evictions)                                                                             \
  X(llc_misses) /* NVM lines that missed the simulated LLC */                                  \
  X(log_bytes_written)                                                                         \
  X(log_records)                                                                               \
  X(log_checkpoints)        /* checkpoints completed (named in the log header) */              \
  X(log_checkpoints_beside) /* of those, pages written back beside changes */

struct Counters {
#define TRISTORE_DECLARE_COUNTER(name) std::uint64_t name = 0;
  TRISTORE_COUNTERS(TRISTORE_DECLARE_COUNTER)
#undef TRISTORE_DECLARE_COUNTER

  Counters& operator+=(const Counters& other) {
#define TRISTORE_ADD_COUNTER(name) name += other.name;
    TRISTORE_COUNTERS(TRISTORE_ADD_COUNTER)
#undef TRISTORE_ADD_COUNTER
    return *this;
  }
  friend Counters operator-(Counters a, const Counters& b) {
#define TRISTORE_SUB_COUNTER(name) a.name -= b.name;
    TRISTORE_COUNTERS(TRISTORE_SUB_COUNTER)
#undef TRISTORE_SUB_COUNTER
    return a;
  }
  // Calls visit(name, value) for every counter, in declaration order.
  template <typename Visit>
  void for_each(Visit&& visit) const {
#define TRISTORE_VISIT_COUNTER(name) visit(#name, name);
    TRISTORE_COUNTERS(TRISTORE_VISIT_COUNTER)
#undef TRISTORE_VISIT_COUNTER
  }
};

}  // namespace tristore
