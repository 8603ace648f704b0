#pragma once
// Locks on (table, key) for isolated transactions: strict two-phase locking. A transaction
// takes a shared lock on each row it reads and an exclusive lock on each row it changes
// (present or not, so no other transaction can insert it either), and holds them until it
// commits or aborts. So no transaction sees another's uncommitted change, and an abort, which
// writes before-images back, never overwrites another transaction's change.
//
// No waiting (the NO_WAIT scheme of two-phase locking): a lock that another transaction holds
// in a conflicting mode is a LockConflict, which the caller handles by aborting and retrying.
// So no transaction ever waits for another, and there is no deadlock to detect.
// An operation outside any transaction takes no lock but fails the same way on a row an open
// transaction holds against it: a read on a row another transaction changed, a change on a
// row another transaction read or changed. A change outside transactions that runs beside
// others (engine/btree_table.hpp) holds a brief lock on its row from before its change until
// its commit is durable: transactions fail on it as on any lock, but other operations outside
// transactions wait for it, for it waits for nothing (check_free, lock_brief).
//
// Rows are named by their table and a 32-bit hash of their key: two rows of a table whose
// hashes collide share a lock, a spurious conflict at worst (for a transaction holding a
// hundred locks, about one lock in 40 million). The table is open addressing
// (linear probing, no allocation per lock): a transaction takes a lock per row it touches.
// Safe for threads (changes side by side take locks under the database latch's changes mode,
// engine/operation_latch.hpp): the table is split into partitions by the key's hash, each
// with a latch of its own, so that threads locking different rows seldom meet. A caller that
// holds the database latch exclusive has the table to itself and takes no partition latch, so
// every call holds the database latch in some mode (wait_while_brief takes it itself). Readers
// outside transactions first ask whether any transaction holds a lock at all (one word,
// changed once per transaction that locks, not once per lock).
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/error.hpp"
#include "common/spin_latch.hpp"
#include "engine/log_record.hpp"
#include "engine/operation_latch.hpp"

namespace tristore {

class TransactionState;

enum class LockMode : std::uint8_t { kShared, kExclusive };

// The error a conflicting operation throws; the transaction that gets it may abort and retry.
class LockConflict : public Error {
 public:
  using Error::Error;
};

using LockName = std::uint64_t;  // (table id + 1) << 32 | key hash: never 0

LockName lock_name(std::uint32_t table_id, std::span<const std::byte> key);

class LockManager {
 public:
  // With the database's latch, whose exclusive holder takes no partition latch; without one,
  // every call latches its partition.
  LockManager();
  explicit LockManager(OperationLatch& database_latch);

  // Takes mode on name for txn, or upgrades its shared lock. A conflicting lock of another
  // transaction -> LockConflict, and txn holds what it held before.
  void lock(TransactionState& txn, std::uint32_t table_id, LockName name, LockMode mode);
  // For an operation outside any transaction: LockConflict if another transaction holds name
  // in a mode that excludes mode; false if a change outside transactions holds it briefly
  // (the caller waits, wait_while_brief, where it holds no page latch, and reads again).
  bool check_free(std::uint32_t table_id, LockName name, LockMode mode) const {
    if (!any_locked()) [[likely]]
      return true;
    return check_free_slow(table_id, name, mode);
  }
  // The exclusive lock of a change outside transactions beside others, for txn (its own
  // single-operation state) until it ends: waits while another such change holds the row;
  // LockConflict if a transaction holds it.
  void lock_brief(TransactionState& txn, std::uint32_t table_id, LockName name);
  // For a brief holder that must wait after all (its change failed midway, and its undo waits
  // for the exclusive latch): its locks stop being brief, so that whoever meets them gets a
  // LockConflict, as from a transaction's, rather than waiting inside the latch for it.
  void end_brevity(TransactionState& txn);
  // Until no brief lock holds name (a transaction's lock then is check_free's to report).
  // Holding the database latch in any mode, or none (then it looks in changes mode).
  void wait_while_brief(LockName name) const;
  // At commit or abort (after its undo): every lock txn holds.
  void release_all(TransactionState& txn);
  // Whether a transaction holds a lock now (a hint: one may take or drop its locks at once).
  bool any_locked() const { return lockers_.load(std::memory_order_acquire) != 0; }
  // Rows locked now (tests).
  std::size_t locked_rows() const;

 private:
  struct Lock {
    LockName name = 0;         // 0: an empty slot
    TxnId exclusive = 0;       // 0: none
    TxnId shared_by = 0;       // a shared holder, 0 if unknown (one of several has left)
    std::uint32_t shared = 0;  // shared holders (the exclusive holder not among them)
    bool brief = false;        // the exclusive holder is a change outside transactions
  };
  // One partition: open addressing over a power of two of slots, at most half full. A
  // transaction's few dozen locks spread over the partitions, so a few slots each will do:
  // all partitions' slots together then fit a core's L1 cache (it grows where needed).
  static constexpr std::size_t kInitialSlots = 16;
  struct alignas(64) Partition {
    mutable SpinLatch latch;
    std::vector<Lock> slots = std::vector<Lock>(kInitialSlots);
    std::size_t count = 0;

    Lock* find(LockName name);
    const Lock* find(LockName name) const;
    Lock& insert(LockName name);
    void erase(Lock* lock);
    void grow();
  };
  static constexpr std::size_t kPartitions = 64;
  // By hash bits above those that pick the slot (names differ most in their low half).
  Partition& partition_of(LockName name) { return partitions_[(name >> 26) % kPartitions]; }
  const Partition& partition_of(LockName name) const {
    return partitions_[(name >> 26) % kPartitions];
  }
  // A partition's latch, unless the caller holds the database latch exclusive.
  class [[nodiscard]] PartitionLatched {
   public:
    PartitionLatched(const LockManager& locks, const Partition& partition)
        : latch_(locks.database_latch_ != nullptr && locks.database_latch_->exclusive_here()
                     ? nullptr
                     : &partition.latch) {
      if (latch_ != nullptr) latch_->lock();
    }
    ~PartitionLatched() {
      if (latch_ != nullptr) latch_->unlock();
    }
    PartitionLatched(const PartitionLatched&) = delete;
    PartitionLatched& operator=(const PartitionLatched&) = delete;

   private:
    SpinLatch* latch_;
  };
  static bool holds(const TransactionState& txn, LockName name);
  // A new lock on name, counted among txn's; the caller sets its holder. Partition latched.
  Lock& insert_held(Partition& partition, TransactionState& txn, LockName name);
  bool check_free_slow(std::uint32_t table_id, LockName name, LockMode mode) const;
  bool held_briefly(LockName name) const;
  [[noreturn]] static void conflict(TxnId txn, TxnId holder, std::uint32_t table_id,
                                    LockMode wanted);

  OperationLatch* database_latch_ = nullptr;
  std::array<Partition, kPartitions> partitions_;
  alignas(64) std::atomic<std::size_t> lockers_{0};  // transactions holding a lock
};

}  // namespace tristore
