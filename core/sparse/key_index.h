// KeyIndex: a map from a sparse model's keys (any u32) to dense indices 0, 1, 2, ... in the order
// the keys were added — the index of a KeyTable's rows and of a batch's distinct features. Open
// addressing with linear probing over a power-of-two table kept at most half full, so a lookup
// is a multiply, a shift and usually one cache line: several times faster than
// std::unordered_map, whose nodes a lookup chases through memory.
//
//   KeyIndex index;
//   auto [row, added] = index.Insert(key);   // row: the key's index; added: it was new
//   std::optional<std::uint32_t> at = index.Find(key);
//
// At most 2^32 - 1 keys. Plain value: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace dtrain::sparse {

class KeyIndex {
 public:
  // The index of `key`, added (as size() before the call) when missing; second: whether it was.
  std::pair<std::uint32_t, bool> Insert(std::uint32_t key) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    std::size_t at = Home(key);
    for (; slots_[at].index != kEmpty; at = (at + 1) & mask_) {
      if (slots_[at].key == key) return {slots_[at].index, false};
    }
    slots_[at] = {key, static_cast<std::uint32_t>(size_)};
    return {static_cast<std::uint32_t>(size_++), true};
  }
  std::optional<std::uint32_t> Find(std::uint32_t key) const {
    if (size_ == 0) return std::nullopt;
    for (std::size_t at = Home(key); slots_[at].index != kEmpty; at = (at + 1) & mask_) {
      if (slots_[at].key == key) return slots_[at].index;
    }
    return std::nullopt;
  }
  std::size_t size() const { return size_; }
  // Forgets every key, keeping the table's memory (a batch's index, reused batch after batch).
  void Clear() {
    if (size_ == 0) return;
    for (Slot& s : slots_) s.index = kEmpty;
    size_ = 0;
  }
  // Memory held, in bytes.
  std::size_t Bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  static constexpr std::uint32_t kEmpty = 0xFFFFFFFFu;
  struct Slot {
    std::uint32_t key = 0;
    std::uint32_t index = kEmpty;
  };

  // Fibonacci hashing: the top bits of key * 2^64 / golden ratio.
  std::size_t Home(std::uint32_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    const std::size_t capacity = old.empty() ? 16 : 2 * old.size();
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<int>(__builtin_ctzll(capacity));
    for (const Slot& s : old) {
      if (s.index == kEmpty) continue;
      std::size_t at = Home(s.key);
      while (slots_[at].index != kEmpty) at = (at + 1) & mask_;
      slots_[at] = s;
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
  int shift_ = 64;
};

}  // namespace dtrain::sparse
