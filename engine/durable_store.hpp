#pragma once
// What the transaction manager needs of an architecture's storage for checkpoints and redo.
#include <cstdint>
#include <span>
#include <unordered_set>

#include "engine/log_record.hpp"

namespace tristore {

// What the log since the checkpoint last says of the pages it names new or freed.
struct LoggedAllocations {
  std::unordered_set<PageId> made;   // new in a durable record, not freed after
  std::unordered_set<PageId> freed;  // freed in a durable record, not made again after
};

class DurableStore {
 public:
  virtual ~DurableStore() = default;
  // Every change so far durable in NVM or SSD (write-ahead rule kept), the catalog saved.
  virtual void checkpoint_pages() = 0;
  // A checkpoint beside changes (TransactionManager::checkpoint_if_due), for a store that
  // writes pages back while changes go on: begin_ (after the begin record, the database latch
  // in changes mode) marks the changes to write back, those made so far; checkpoint_ (changes
  // mode) writes a batch back, true once done; finish_ (the latch exclusive) writes back what
  // the batches left, as checkpoint_pages does for all. The defaults write nothing beside.
  virtual void begin_checkpoint_pages_beside() {}
  virtual bool checkpoint_pages_beside() { return true; }
  virtual void finish_checkpoint_pages_beside() { checkpoint_pages(); }
  // One entry of a kRedoOperation record at lsn: page bytes (a full image when the length is
  // kPageSize), a new table root (kRedoRootEntry) or a freed page (kRedoFreedEntry).
  virtual void redo(Lsn lsn, const RedoPageBytes& entry, std::span<const std::byte> bytes) = 0;
  // Restart, before redo: the log names this page from the checkpoint on. nvm-direct: its
  // NVM copy may be newer than its checksum (a crash between an in-place write and the
  // checksum), and redo or the before-images rewrite what matters, so it is not checked
  // against that checksum. (Buffered architectures mend such a page from the double-write
  // area, header included, and check every page.)
  virtual void trust_page(PageId) {}
  // nvm-direct: puts back bytes an interrupted operation changed in place.
  virtual void restore_before_image(const RedoPageBytes&, std::span<const std::byte>) {}
  // Restart, after redo and the before-images: gives back the storage of pages that are in no
  // tree. A crash may come between an operation's claim of a page (a slot header, persisted at
  // once) and its durable record, or between that record and the free it ends with. The log
  // since the checkpoint has the last word on each page it names (LoggedAllocations). Returns
  // how many pages were given back.
  virtual std::uint64_t settle_allocations(const LoggedAllocations&) { return 0; }
  // A page that the next catalog saved no longer names (a bulk load's old root) goes with it
  // where a crash after that save could otherwise keep it (an NVM slot is its home); the
  // caller frees it once that save is durable.
  virtual void free_with_next_catalog(PageId) {}
};

}  // namespace tristore
