#include "engine/lock_manager.hpp"

#include <optional>

#include "common/checksum.hpp"
#include "engine/transaction_state.hpp"

namespace tristore {

LockName lock_name(std::uint32_t table_id, std::span<const std::byte> key) {
  // The table in the high half, so rows of different tables never share a lock, and never 0
  // (an empty slot): table ids stay far below 2^32 - 1.
  const std::uint32_t hash = crc32c(key.data(), key.size(), table_id);
  return (static_cast<LockName>(table_id) + 1) << 32 | hash;
}

LockManager::LockManager() = default;
LockManager::LockManager(OperationLatch& database_latch) : database_latch_(&database_latch) {}

void LockManager::lock(TransactionState& txn, std::uint32_t table_id, LockName name,
                       LockMode mode) {
  Partition& partition = partition_of(name);
  const PartitionLatched latched(*this, partition);
  Lock* found = partition.find(name);
  if (found == nullptr) {
    // 1. A row nobody holds.
    Lock& lock = insert_held(partition, txn, name);
    if (mode == LockMode::kShared) {
      lock.shared = 1;
      lock.shared_by = txn.id;
    } else {
      lock.exclusive = txn.id;
    }
    return;
  }
  // 2. Held already, in this mode or a stronger one.
  Lock& lock = *found;
  if (lock.exclusive == txn.id) return;
  const bool shared_by_me = lock.shared_by == txn.id || (lock.shared > 0 && holds(txn, name));
  if (mode == LockMode::kShared && shared_by_me) return;
  // 3. Another transaction's lock in the way (an upgrade needs to be the only reader).
  if (lock.exclusive != 0) conflict(txn.id, lock.exclusive, table_id, mode);
  if (mode == LockMode::kExclusive && lock.shared > (shared_by_me ? 1u : 0u))
    conflict(txn.id, lock.shared_by != txn.id ? lock.shared_by : 0, table_id, mode);
  // 4. Granted.
  if (mode == LockMode::kShared) {
    ++lock.shared;
    if (lock.shared_by == 0) lock.shared_by = txn.id;
  } else {
    lock.shared = 0;
    lock.shared_by = 0;
    lock.exclusive = txn.id;
  }
  if (shared_by_me) return;
  if (txn.locks.empty()) lockers_.fetch_add(1, std::memory_order_acq_rel);
  txn.locks.push_back(name);
}

bool LockManager::check_free_slow(std::uint32_t table_id, LockName name, LockMode mode) const {
  const Partition& partition = partition_of(name);
  const PartitionLatched latched(*this, partition);
  const Lock* lock = partition.find(name);
  if (lock == nullptr) return true;
  if (lock->brief) return false;
  if (lock->exclusive != 0) conflict(0, lock->exclusive, table_id, mode);
  if (mode == LockMode::kExclusive && lock->shared != 0)
    conflict(0, lock->shared_by, table_id, mode);
  return true;
}

void LockManager::lock_brief(TransactionState& txn, std::uint32_t table_id, LockName name) {
  for (;;) {
    {
      Partition& partition = partition_of(name);
      const PartitionLatched latched(*this, partition);
      const Lock* found = partition.find(name);
      if (found == nullptr) {
        Lock& lock = insert_held(partition, txn, name);
        lock.exclusive = txn.id;
        lock.brief = true;
        return;
      }
      if (!found->brief)
        conflict(0, found->exclusive != 0 ? found->exclusive : found->shared_by, table_id,
                 LockMode::kExclusive);
    }
    wait_while_brief(name);  // without the partition's latch
  }
}

void LockManager::end_brevity(TransactionState& txn) {
  for (const LockName name : txn.locks) {
    Partition& partition = partition_of(name);
    const PartitionLatched latched(*this, partition);
    if (Lock* lock = partition.find(name); lock != nullptr && lock->exclusive == txn.id)
      lock->brief = false;
  }
}

LockManager::Lock& LockManager::insert_held(Partition& partition, TransactionState& txn,
                                            LockName name) {
  Lock& lock = partition.insert(name);
  if (txn.locks.empty()) lockers_.fetch_add(1, std::memory_order_acq_rel);
  txn.locks.push_back(name);
  return lock;
}

bool LockManager::held_briefly(LockName name) const {
  // A caller outside the database latch (a scan between its copies) looks in changes mode, as
  // a changer would: the exclusive holder changes partitions without their latches.
  std::optional<OperationLatch::Changes> outside;
  if (database_latch_ != nullptr && !database_latch_->held_here())
    outside.emplace(*database_latch_, OperationLatch::Purpose::kRead);
  const Partition& partition = partition_of(name);
  const PartitionLatched latched(*this, partition);
  const Lock* lock = partition.find(name);
  return lock != nullptr && lock->brief;
}

void LockManager::wait_while_brief(LockName name) const {
  for (unsigned spins = 0; held_briefly(name); ++spins) spin_back_off(spins);
}

void LockManager::release_all(TransactionState& txn) {
  if (txn.locks.empty()) return;
  for (const LockName name : txn.locks) {
    Partition& partition = partition_of(name);
    const PartitionLatched latched(*this, partition);
    Lock* lock = partition.find(name);
    if (lock == nullptr) continue;
    if (lock->exclusive == txn.id) {
      lock->exclusive = 0;
    } else if (lock->shared != 0) {
      --lock->shared;
      if (lock->shared_by == txn.id) lock->shared_by = 0;
    }
    if (lock->exclusive == 0 && lock->shared == 0) partition.erase(lock);
  }
  txn.locks.clear();
  lockers_.fetch_sub(1, std::memory_order_acq_rel);
}

std::size_t LockManager::locked_rows() const {
  std::size_t rows = 0;
  for (const Partition& partition : partitions_) {
    const PartitionLatched latched(*this, partition);
    rows += partition.count;
  }
  return rows;
}

bool LockManager::holds(const TransactionState& txn, LockName name) {
  for (const LockName held : txn.locks)
    if (held == name) return true;
  return false;
}

LockManager::Lock* LockManager::Partition::find(LockName name) {
  return const_cast<Lock*>(static_cast<const Partition*>(this)->find(name));
}

const LockManager::Lock* LockManager::Partition::find(LockName name) const {
  const std::size_t mask = slots.size() - 1;
  for (std::size_t i = name & mask;; i = (i + 1) & mask) {
    if (slots[i].name == name) return &slots[i];
    if (slots[i].name == 0) return nullptr;
  }
}

LockManager::Lock& LockManager::Partition::insert(LockName name) {
  if (2 * (count + 1) > slots.size()) grow();
  const std::size_t mask = slots.size() - 1;
  std::size_t i = name & mask;
  while (slots[i].name != 0) i = (i + 1) & mask;
  ++count;
  slots[i] = Lock{.name = name};
  return slots[i];
}

void LockManager::Partition::erase(Lock* lock) {
  // Backward shift: move later entries of the probe run into the hole, so that no lookup
  // stops early at it (no tombstones).
  const std::size_t mask = slots.size() - 1;
  auto hole = static_cast<std::size_t>(lock - slots.data());
  for (std::size_t i = (hole + 1) & mask; slots[i].name != 0; i = (i + 1) & mask) {
    const std::size_t home = slots[i].name & mask;
    // The entry may fill the hole if its home lies at or before the hole, cyclically.
    if (((i - home) & mask) >= ((i - hole) & mask)) {
      slots[hole] = slots[i];
      hole = i;
    }
  }
  slots[hole] = Lock{};
  --count;
}

void LockManager::Partition::grow() {
  std::vector<Lock> old(slots.size() * 2);
  old.swap(slots);
  count = 0;
  for (const Lock& lock : old)
    if (lock.name != 0) insert(lock.name) = lock;
}

void LockManager::conflict(TxnId txn, TxnId holder, std::uint32_t table_id, LockMode wanted) {
  const char* what = wanted == LockMode::kShared ? "read" : "change";
  const std::string by =
      holder != 0 ? fmt::format("transaction {}", holder) : "another transaction";
  if (txn == 0)
    throw LockConflict(fmt::format(
        "cannot {} a row of table {}: open {} holds it (retry once it ends)", what, table_id, by));
  throw LockConflict(
      fmt::format("transaction {} cannot {} a row of table {}: {} holds it (abort and retry)", txn,
                  what, table_id, by));
}

}  // namespace tristore
