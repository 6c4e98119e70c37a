#include "core/data/sampler.h"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <numeric>
#include <random>
#include <vector>

#include "core/data/random.h"

namespace dtrain::data {
namespace sampler_test {

const std::size_t kRowCounts[] = {0, 1, 5, 7, 10, 13, 97, 100, 1000};

bool IsPermutation(std::vector<std::uint32_t> v, std::size_t n) {
  if (v.size() != n) return false;
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < n; ++i) {
    if (v[i] != i) return false;
  }
  return true;
}

BOOST_AUTO_TEST_SUITE(sampler)

BOOST_AUTO_TEST_CASE(splitmix64_matches_the_reference_sequence) {
  // First outputs of Vigna's splitmix64.c with x = 0: the generator is the published one.
  SplitMix64 rng(0);
  BOOST_TEST(rng.Next() == 0xE220A8397B1DCDAFULL);
  BOOST_TEST(rng.Next() == 0x6E789E6AA1B965F4ULL);
  BOOST_TEST(rng.Next() == 0x06C45D188009454FULL);
}

BOOST_AUTO_TEST_CASE(bounded_stays_in_range_and_uniform_stays_in_unit_interval) {
  SplitMix64 rng(7);
  for (std::uint32_t bound : {1u, 2u, 3u, 10u, 1000u, 4000000000u}) {
    for (int i = 0; i < 1000; ++i) BOOST_TEST(rng.Bounded(bound) < bound);
  }
  for (int i = 0; i < 1000; ++i) {
    const double u = rng.Uniform();
    BOOST_TEST((u >= 0.0 && u < 1.0));
  }
}

BOOST_AUTO_TEST_CASE(shards_cover_every_row_exactly_once) {
  for (std::size_t rows : kRowCounts) {
    for (int world = 1; world <= 7; ++world) {
      std::size_t expected_begin = 0, smallest = rows, largest = 0;
      for (int rank = 0; rank < world; ++rank) {
        const ShardRange s = ShardOf(rows, rank, world);
        BOOST_TEST(s.begin == expected_begin, "rows " << rows << " world " << world);
        BOOST_TEST(s.end >= s.begin);
        expected_begin = s.end;
        smallest = std::min(smallest, s.size());
        largest = std::max(largest, s.size());
      }
      BOOST_TEST(expected_begin == rows, "rows " << rows << " world " << world);
      BOOST_TEST(largest - smallest <= 1u, "rows " << rows << " world " << world);
    }
  }
}

BOOST_AUTO_TEST_CASE(epoch_permutation_is_a_deterministic_permutation) {
  for (std::size_t rows : kRowCounts) {
    const auto p = EpochPermutation(rows, 42, 3);
    BOOST_TEST(IsPermutation(p, rows), "rows " << rows);
    BOOST_TEST(p == EpochPermutation(rows, 42, 3));
  }
  const auto a = EpochPermutation(1000, 42, 0);
  BOOST_TEST(a != EpochPermutation(1000, 42, 1));  // another epoch
  BOOST_TEST(a != EpochPermutation(1000, 43, 0));  // another seed
}

BOOST_AUTO_TEST_CASE(epoch_permutation_is_pinned) {
  // Resuming from a checkpoint replays epochs: the sequence must not change between versions.
  const std::vector<std::uint32_t> expected = {2, 6, 3, 4, 9, 8, 5, 7, 0, 1};
  BOOST_TEST(EpochPermutation(10, 42, 0) == expected);
}

BOOST_AUTO_TEST_CASE(epoch_permutation_is_unbiased) {
  // Each row must land in each position with probability 1/n. A classic off-by-one (drawing j
  // from [0, i) instead of [0, i]) never leaves a row in place, which this would catch.
  constexpr std::size_t kRows = 5;
  constexpr int kEpochs = 20000;
  std::vector<int> count(kRows * kRows, 0);  // [row][position]
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    const auto p = EpochPermutation(kRows, 9, static_cast<std::uint64_t>(epoch));
    for (std::size_t pos = 0; pos < kRows; ++pos) ++count[p[pos] * kRows + pos];
  }
  const double expected = static_cast<double>(kEpochs) / kRows;
  for (int c : count) BOOST_TEST(std::abs(c - expected) < 0.08 * expected);
}

BOOST_AUTO_TEST_CASE(batches_over_all_ranks_cover_each_row_once_per_epoch) {
  for (std::size_t rows : {1u, 10u, 97u, 1000u}) {
    for (std::size_t batch : {1u, 3u, 32u}) {
      for (int world = 1; world <= 7; ++world) {
        std::vector<BatchSampler> samplers;
        for (int rank = 0; rank < world; ++rank) samplers.emplace_back(rows, batch, 5, rank, world);
        const std::size_t steps = samplers[0].StepsPerEpoch();
        for (const BatchSampler& s : samplers) BOOST_TEST(s.StepsPerEpoch() == steps);
        for (std::uint64_t epoch : {0u, 1u, 2u}) {
          std::vector<int> seen(rows, 0);
          for (BatchSampler& s : samplers) {
            std::vector<std::uint32_t> mine;
            for (std::size_t i = 0; i < steps; ++i) {
              const auto b = s.Batch(epoch, i);
              BOOST_TEST(b.size() <= batch);
              mine.insert(mine.end(), b.begin(), b.end());
            }
            // A rank's batches are its shard's slice of the epoch permutation, in order.
            const auto p = EpochPermutation(rows, 5, epoch);
            const std::vector<std::uint32_t> slice(p.begin() + s.shard().begin,
                                                   p.begin() + s.shard().end);
            BOOST_TEST(mine == slice);
            for (std::uint32_t r : mine) ++seen[r];
          }
          const bool once = std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; });
          BOOST_TEST(once, "rows " << rows << " batch " << batch << " world " << world << " epoch "
                                   << epoch);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(steps_per_epoch_follows_the_largest_shard) {
  // 10 rows over 3 ranks: shards of 4, 3, 3; batch 2 -> 2 steps everywhere.
  BatchSampler r0(10, 2, 1, 0, 3), r2(10, 2, 1, 2, 3);
  BOOST_TEST(r0.StepsPerEpoch() == 2u);
  BOOST_TEST(r2.StepsPerEpoch() == 2u);
  BOOST_TEST(r0.Batch(0, 1).size() == 2u);
  BOOST_TEST(r2.Batch(0, 1).size() == 1u);  // the smaller shard's short final batch
  // 2 rows over 3 ranks: rank 2 holds nothing but still takes the one step, with an empty batch.
  BatchSampler empty(2, 4, 1, 2, 3);
  BOOST_TEST(empty.StepsPerEpoch() == 1u);
  BOOST_TEST(empty.Batch(0, 0).empty());
}

BOOST_AUTO_TEST_CASE(going_back_to_an_earlier_epoch_recomputes_it) {
  BatchSampler s(100, 100, 3);
  const auto first = s.Batch(0, 0);
  const std::vector<std::uint32_t> epoch0(first.begin(), first.end());
  const auto second = s.Batch(1, 0);
  const std::vector<std::uint32_t> epoch1(second.begin(), second.end());
  BOOST_TEST(epoch0 != epoch1);
  const auto again = s.Batch(0, 0);
  BOOST_TEST(std::vector<std::uint32_t>(again.begin(), again.end()) == epoch0);
}

BOOST_AUTO_TEST_CASE(global_batches_split_each_step_exactly_as_one_big_batch) {
  for (int world = 1; world <= 7; ++world) {
    for (std::size_t rows : {1u, 37u, 1000u}) {
      const std::size_t batch = 5;
      BatchSampler one(rows, batch * static_cast<std::size_t>(world), 9);
      std::vector<BatchSampler> ranks;
      for (int r = 0; r < world; ++r) {
        ranks.emplace_back(rows, batch, 9, r, world, ShardMode::kGlobalBatches);
      }
      BOOST_TEST_CONTEXT("world " << world << " rows " << rows) {
        for (const BatchSampler& s : ranks) BOOST_TEST(s.StepsPerEpoch() == one.StepsPerEpoch());
        std::vector<int> seen(rows, 0);
        for (std::size_t i = 0; i < one.StepsPerEpoch(); ++i) {
          // The ranks' batches, in rank order, are the one big batch.
          std::vector<std::uint32_t> joined;
          for (BatchSampler& s : ranks) {
            const auto b = s.Batch(1, i);
            BOOST_TEST(b.size() <= batch);
            joined.insert(joined.end(), b.begin(), b.end());
          }
          const auto big = one.Batch(1, i);
          BOOST_TEST((joined == std::vector<std::uint32_t>(big.begin(), big.end())));
          BOOST_TEST(ranks[0].StepRows(i) == big.size());
          BOOST_TEST(ranks[0].RowsBefore(i) == std::min(rows, i * batch * world));
          for (std::uint32_t row : joined) ++seen[row];
        }
        BOOST_TEST(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
        BOOST_TEST(ranks[0].RowsBefore(one.StepsPerEpoch()) == rows);  // an epoch: every row
      }
    }
  }
}

// RowsBefore(i) is what the steps before i took over all ranks, in either mode, to an epoch's
// every row.
BOOST_AUTO_TEST_CASE(rows_before_a_step_are_the_rows_its_earlier_steps_took) {
  for (const ShardMode mode : {ShardMode::kGlobalBatches, ShardMode::kContiguousShards}) {
    for (int world : {1, 3, 4}) {
      for (std::size_t rows : {1u, 37u, 1000u}) {
        const BatchSampler s(rows, 7, 3, 0, world, mode);
        BOOST_TEST_CONTEXT("world " << world << " rows " << rows) {
          std::size_t taken = 0;
          for (std::size_t i = 0; i <= s.StepsPerEpoch(); ++i) {
            BOOST_TEST(s.RowsBefore(i) == taken, "step " << i);
            if (i < s.StepsPerEpoch()) taken += s.StepRows(i);
          }
          BOOST_TEST(taken == rows);
        }
      }
    }
  }
}

// A fixed global batch (an elastic job's G = workers x batch) over any smaller world: each step
// takes the same slice of the epoch order as over the full world, split into shares that differ
// by at most one row; over the full world the shares are today's.
BOOST_AUTO_TEST_CASE(a_fixed_global_batch_takes_the_same_slice_whatever_the_world) {
  constexpr int kWorkers = 5;
  constexpr std::size_t kBatch = 4, kGlobal = kWorkers * kBatch;
  for (std::size_t rows : {1u, 37u, 1000u}) {
    std::vector<BatchSampler> full;
    for (int r = 0; r < kWorkers; ++r) {
      full.emplace_back(rows, kBatch, 9, r, kWorkers, ShardMode::kGlobalBatches);
    }
    for (int world = 1; world <= kWorkers; ++world) {
      std::vector<BatchSampler> members;
      for (int p = 0; p < world; ++p) {
        members.emplace_back(rows, kBatch, 9, p, world, ShardMode::kGlobalBatches, kGlobal);
      }
      BOOST_TEST_CONTEXT("world " << world << " rows " << rows) {
        BOOST_TEST(members[0].StepsPerEpoch() == full[0].StepsPerEpoch());
        for (std::size_t i = 0; i < full[0].StepsPerEpoch(); ++i) {
          std::vector<std::uint32_t> slice, joined;
          std::size_t smallest = rows, largest = 0;
          for (BatchSampler& s : full) {
            const auto b = s.Batch(2, i);
            slice.insert(slice.end(), b.begin(), b.end());
          }
          for (int p = 0; p < world; ++p) {
            const auto b = members[static_cast<std::size_t>(p)].Batch(2, i);
            if (world == kWorkers) {
              const auto today = full[static_cast<std::size_t>(p)].Batch(2, i);
              BOOST_TEST((std::vector<std::uint32_t>(b.begin(), b.end()) ==
                          std::vector<std::uint32_t>(today.begin(), today.end())));
            }
            smallest = std::min(smallest, b.size());
            largest = std::max(largest, b.size());
            joined.insert(joined.end(), b.begin(), b.end());
          }
          BOOST_TEST(joined == slice, "step " << i);
          BOOST_TEST(largest - smallest <= 1u);
          BOOST_TEST(members[0].StepRows(i) == slice.size());
          BOOST_TEST(members[0].RowsBefore(i) == full[0].RowsBefore(i));
        }
      }
    }
  }
}

// Backup workers: whatever ranks each step goes on without (any masks, the epoch's last step
// taking every rank), the taken parts of an epoch's steps cover every row exactly once, and no
// rank's part ever exceeds ceil((G + N - 1) / (N - b)) rows when at most b ranks are left out.
BOOST_AUTO_TEST_CASE(owed_rows_come_back_and_every_row_is_taken_once_per_epoch) {
  std::mt19937_64 rng(11);
  for (int world = 2; world <= 6; ++world) {
    for (int backups = 1; backups < world; ++backups) {
      for (std::size_t rows : {7u, 100u, 1001u}) {
        const std::size_t batch = 4;
        const std::size_t global = batch * static_cast<std::size_t>(world);
        const std::size_t bound = (global + static_cast<std::size_t>(world) - 1 +
                                   static_cast<std::size_t>(world - backups) - 1) /
                                  static_cast<std::size_t>(world - backups);
        std::vector<BatchSampler> ranks;
        for (int r = 0; r < world; ++r) {
          ranks.emplace_back(rows, batch, 3, r, world, ShardMode::kGlobalBatches);
        }
        BOOST_TEST_CONTEXT("world " << world << " backups " << backups << " rows " << rows) {
          for (std::uint64_t epoch : {0u, 1u}) {
            std::vector<int> seen(rows, 0);
            std::vector<std::uint32_t> owed, next;
            const std::size_t steps = ranks[0].StepsPerEpoch();
            for (std::size_t i = 0; i < steps; ++i) {
              // Leave out up to `backups` random ranks, none at the epoch's last step.
              std::uint64_t taken = (std::uint64_t{1} << world) - 1;
              if (i + 1 < steps) {
                for (int k = 0; k < backups; ++k) taken &= ~(std::uint64_t{1} << (rng() % world));
              }
              for (int r = 0; r < world; ++r) {
                const auto part = ranks[static_cast<std::size_t>(r)].Batch(epoch, i, owed);
                BOOST_TEST(part.size() <= bound);
                if ((taken >> r) & 1u) {
                  for (std::uint32_t row : part) ++seen[row];
                }
              }
              OwedAfter(owed, ranks[0].Fresh(i), world, taken, next);
              owed.swap(next);
            }
            BOOST_TEST(owed.empty());
            BOOST_TEST(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(without_owed_rows_a_step_is_the_plain_global_batch) {
  BatchSampler s(50, 4, 2, 1, 3, ShardMode::kGlobalBatches);
  const auto plain = s.Batch(0, 2);
  const std::vector<std::uint32_t> expected(plain.begin(), plain.end());
  const auto again = s.Batch(0, 2, {});
  BOOST_TEST(std::vector<std::uint32_t>(again.begin(), again.end()) == expected);
  std::vector<std::uint32_t> owed;
  OwedAfter({}, s.Fresh(2), 3, 0b111, owed);
  BOOST_TEST(owed.empty());
  // Rank 1 left out of step 2: its part (positions 28..31 of 12-row steps) is owed, in order.
  OwedAfter({}, s.Fresh(2), 3, 0b101, owed);
  BOOST_TEST(owed == (std::vector<std::uint32_t>{28, 29, 30, 31}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sampler_test
}  // namespace dtrain::data
