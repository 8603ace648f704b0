#pragma once
// What restart after a crash did and how long each phase took (paper Figure 17).
#include <cstdint>

namespace tristore {

struct RestartReport {
  bool performed = false;                 // false: a new database
  double page_table_rebuild_seconds = 0;  // NVM slot headers -> combined page table
  double log_open_seconds = 0;            // header, end of the log
  double analysis_seconds = 0;
  double redo_seconds = 0;
  double undo_seconds = 0;  // losers' undo so far (deferred per table until it is opened)
  std::uint64_t log_bytes_scanned = 0;
  std::uint64_t torn_pages_mended = 0;  // from the double-write area, before redo
  std::uint64_t redo_operations = 0;    // kRedoOperation and kTupleOperation records replayed
  std::uint64_t redo_entries_applied = 0;
  std::uint64_t before_images_restored = 0;  // nvm-direct: an interrupted operation
  std::uint64_t pages_given_back = 0;        // claimed or freed by operations a crash cut short
  std::uint64_t losers = 0;
  std::uint64_t undo_records_pending = 0;  // at the end of analysis
};

}  // namespace tristore
