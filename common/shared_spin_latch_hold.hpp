#pragma once
// A shared or exclusive hold of a SharedSpinLatch word, let go when the hold goes (move-only):
// the leaf latch that main-memory's and nvm-direct's changes side by side keep in their guards
// (tiers/main_memory_writes.hpp, tiers/nvm_direct_writes.hpp).
#include <cassert>
#include <cstdint>
#include <utility>

#include "common/shared_spin_latch.hpp"

namespace tristore {

class SharedSpinLatchHold {
 public:
  SharedSpinLatchHold() = default;
  SharedSpinLatchHold(SharedSpinLatchHold&& other) noexcept
      : word_(std::exchange(other.word_, nullptr)), exclusive_(other.exclusive_) {}
  SharedSpinLatchHold& operator=(SharedSpinLatchHold&& other) noexcept {
    if (this != &other) {
      release();
      word_ = std::exchange(other.word_, nullptr);
      exclusive_ = other.exclusive_;
    }
    return *this;
  }
  SharedSpinLatchHold(const SharedSpinLatchHold&) = delete;
  SharedSpinLatchHold& operator=(const SharedSpinLatchHold&) = delete;
  ~SharedSpinLatchHold() { release(); }

  void lock(std::uint64_t& word, bool exclusive) {
    assert(word_ == nullptr);
    SharedSpinLatch latch(word);
    if (exclusive)
      latch.lock();
    else
      latch.lock_shared();
    word_ = &word;
    exclusive_ = exclusive;
  }
  // Exclusive without waiting: whether it is held now.
  bool try_lock(std::uint64_t& word) {
    assert(word_ == nullptr);
    if (!SharedSpinLatch(word).try_lock()) return false;
    word_ = &word;
    exclusive_ = true;
    return true;
  }
  bool held() const { return word_ != nullptr; }
  bool exclusive() const { return word_ != nullptr && exclusive_; }
  void release() {
    if (word_ == nullptr) return;
    SharedSpinLatch latch(*std::exchange(word_, nullptr));
    if (exclusive_)
      latch.unlock();
    else
      latch.unlock_shared();
  }

 private:
  std::uint64_t* word_ = nullptr;  // held while set
  bool exclusive_ = false;
};

}  // namespace tristore
