// RingQueue: a FIFO (with pop_back for monotone queues) in one contiguous buffer used as a ring
// (capacity a power of two, doubled when full), for short queues touched at a high rate where
// std::deque's block map costs extra cache misses and its construction allocates
// (core::LazyScaler's sample window, DiluVerticalController's KLC records). Not thread-safe.
#ifndef SLUICE_COMMON_RING_QUEUE_H_
#define SLUICE_COMMON_RING_QUEUE_H_

#include <cstddef>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sluice::common {

// T must be default-constructible and movable. front(), back(), pop_front(), pop_back() and
// operator[] require a non-empty queue (operator[]: i < size()); SLUICE_CHECKed.
template <typename T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const T& front() const {
    SLUICE_CHECK(size_ > 0);
    return buf_[head_];
  }
  const T& back() const { return (*this)[size_ - 1]; }
  // The i-th element from the front.
  const T& operator[](size_t i) const {
    SLUICE_CHECK(i < size_);
    return buf_[(head_ + i) & (buf_.size() - 1)];
  }
  void push_back(T v) {
    if (size_ == buf_.size())
      Grow();
    buf_[(head_ + size_) & (buf_.size() - 1)] = std::move(v);
    ++size_;
  }
  void pop_front() {
    SLUICE_CHECK(size_ > 0);
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
  }
  void pop_back() {
    SLUICE_CHECK(size_ > 0);
    --size_;
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }

 private:
  void Grow() {
    std::vector<T> next(buf_.empty() ? 8 : 2 * buf_.size());
    for (size_t i = 0; i < size_; ++i)
      next[i] = std::move(buf_[(head_ + i) & (buf_.size() - 1)]);
    buf_ = std::move(next);
    head_ = 0;
  }

  std::vector<T> buf_;  // size 0 or a power of two
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace sluice::common

#endif  // SLUICE_COMMON_RING_QUEUE_H_
