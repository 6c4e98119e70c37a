// A streamed file's batches (data.stream): every epoch each row is in exactly one batch of one
// replica, replicas take the same number of steps, batches never exceed the batch size nor span
// blocks, the order changes from epoch to epoch, and batch i of epoch e is the same whenever it
// is asked for (a resumed run gets the batches an uninterrupted one got).
#include "core/sparse/streamed_batches.h"

#include <boost/test/unit_test.hpp>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/temp_dir.h"

namespace dtrain::sparse {
namespace streamed_batches_test {

using testing::TempDir;

// 203 rows; row r sets feature r (its key r) and one shared feature, 100001.
data::LibsvmBlockIndex Indexed(const TempDir& dir, std::uint64_t block_bytes) {
  std::string text;
  for (int r = 0; r < 203; ++r)
    text += std::to_string(r % 2) + " " + std::to_string(r + 1) + ":1 100001:1\n";
  Result<data::LibsvmBlockIndex> index =
      data::IndexLibsvmBlocks(dir.Write("rows.svm", text), {}, block_bytes);
  BOOST_REQUIRE_MESSAGE(index.ok(), index.status().message());
  return index.value();
}

std::unique_ptr<StreamedBatches> Open(const data::LibsvmBlockIndex& index, int rank, int world) {
  Result<std::unique_ptr<StreamedBatches>> b = StreamedBatches::Open(index, 8, 5, rank, world);
  BOOST_REQUIRE_MESSAGE(b.ok(), b.status().message());
  return std::move(b).value();
}

// The rows of a batch: its keys other than the shared one.
std::vector<std::uint32_t> RowsOf(const SparseBatch& batch) {
  std::vector<std::uint32_t> rows;
  for (const std::uint32_t key : batch.keys) {
    if (key != 100000) rows.push_back(key);
  }
  return rows;
}

BOOST_AUTO_TEST_SUITE(streamed_batches)

BOOST_AUTO_TEST_CASE(each_epoch_visits_every_row_once_over_the_replicas) {
  TempDir dir;
  const data::LibsvmBlockIndex index = Indexed(dir, 300);
  BOOST_REQUIRE(index.blocks.size() >= 6u);
  std::vector<std::unique_ptr<StreamedBatches>> replicas;
  for (int r = 0; r < 3; ++r) replicas.push_back(Open(index, r, 3));
  const std::size_t steps = replicas[0]->StepsPerEpoch();
  std::vector<std::vector<std::uint32_t>> first_epoch(3);
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::multiset<std::uint32_t> seen;
    for (int r = 0; r < 3; ++r) {
      BOOST_TEST(replicas[r]->StepsPerEpoch() == steps);
      for (std::size_t i = 0; i < steps; ++i) {
        SparseBatch batch;
        BOOST_REQUIRE(replicas[r]->Fill(epoch, i, &batch).ok());
        BOOST_TEST(batch.rows() <= 8);
        const std::vector<std::uint32_t> rows = RowsOf(batch);
        BOOST_TEST(rows.size() == static_cast<std::size_t>(batch.rows()));
        seen.insert(rows.begin(), rows.end());
        if (epoch == 0) {
          first_epoch[r].insert(first_epoch[r].end(), rows.begin(), rows.end());
        } else if (r == 0 && i == 0) {
          BOOST_TEST(rows != std::vector<std::uint32_t>(first_epoch[0].begin(),
                                                        first_epoch[0].begin() + rows.size()));
        }
      }
    }
    BOOST_TEST(seen.size() == 203u);
    BOOST_TEST(std::set<std::uint32_t>(seen.begin(), seen.end()).size() == 203u);
  }
}

BOOST_AUTO_TEST_CASE(a_batch_is_the_same_whenever_it_is_asked_for) {
  TempDir dir;
  const data::LibsvmBlockIndex index = Indexed(dir, 300);
  const std::unique_ptr<StreamedBatches> straight = Open(index, 1, 2);
  std::vector<std::vector<std::uint32_t>> batches;
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    for (std::size_t i = 0; i < straight->StepsPerEpoch(); ++i) {
      SparseBatch batch;
      BOOST_REQUIRE(straight->Fill(epoch, i, &batch).ok());
      batches.push_back(RowsOf(batch));
    }
  }
  const std::size_t steps = straight->StepsPerEpoch();
  const std::unique_ptr<StreamedBatches> resumed = Open(index, 1, 2);
  for (const std::size_t at : {steps + 3, std::size_t{5}, std::size_t{0}, 2 * steps - 1}) {
    SparseBatch batch;
    BOOST_REQUIRE(resumed->Fill(at / steps, at % steps, &batch).ok());
    BOOST_TEST(RowsOf(batch) == batches[at]);
  }
}

BOOST_AUTO_TEST_CASE(a_file_of_fewer_blocks_than_replicas_is_refused) {
  TempDir dir;
  const data::LibsvmBlockIndex index = Indexed(dir, 1 << 20);
  BOOST_REQUIRE(index.blocks.size() == 1u);
  const Result<std::unique_ptr<StreamedBatches>> b = StreamedBatches::Open(index, 8, 5, 0, 2);
  BOOST_REQUIRE(!b.ok());
  BOOST_TEST(b.status().message().find("lower data.stream_block_mib") != std::string::npos,
             b.status().message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace streamed_batches_test
}  // namespace dtrain::sparse
