// IdSet: a set of ints in [0, universe) as a two-level bitmap: O(1) insert, erase and contains,
// and the lowest member in O(universe / 4096) word tests. DiluScheduler keeps its idle GPUs and
// nodes in these (a std::set allocated a node per insert). Not thread-safe.
#ifndef SLUICE_CORE_DILU_ID_SET_H_
#define SLUICE_CORE_DILU_ID_SET_H_

#include <bit>
#include <cstdint>
#include <vector>

namespace sluice::core {

class IdSet {
 public:
  explicit IdSet(int universe = 0)
      : words_((universe + 63) / 64, 0), summary_((words_.size() + 63) / 64, 0) {}

  // Preconditions: 0 <= id < universe.
  void Insert(int id) {
    uint64_t& w = words_[id >> 6];
    const uint64_t bit = uint64_t{1} << (id & 63);
    if (w & bit)
      return;
    w |= bit;
    summary_[id >> 12] |= uint64_t{1} << ((id >> 6) & 63);
    ++size_;
  }
  void Erase(int id) {
    uint64_t& w = words_[id >> 6];
    const uint64_t bit = uint64_t{1} << (id & 63);
    if (!(w & bit))
      return;
    w &= ~bit;
    if (w == 0)
      summary_[id >> 12] &= ~(uint64_t{1} << ((id >> 6) & 63));
    --size_;
  }
  bool contains(int id) const { return (words_[id >> 6] >> (id & 63)) & 1; }
  bool empty() const { return size_ == 0; }
  int size() const { return size_; }
  // The lowest member, or -1 when empty.
  int First() const {
    if (size_ == 0)
      return -1;
    for (size_t s = 0; s < summary_.size(); ++s) {
      if (summary_[s] == 0)
        continue;
      const int word = static_cast<int>(s * 64) + std::countr_zero(summary_[s]);
      return word * 64 + std::countr_zero(words_[word]);
    }
    return -1;
  }

 private:
  std::vector<uint64_t> words_;
  std::vector<uint64_t> summary_;  // bit w set <=> words_[w] != 0
  int size_ = 0;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_DILU_ID_SET_H_
