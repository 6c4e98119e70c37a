// Compressed pushes to parameter servers (push_codec.h, PsClient with compression): a slice goes
// as bf16 values or top-k pairs and comes back at the shard as the rounded values or the k
// largest; error feedback conserves a worker's gradients over its pushes; malformed encodings are
// refused without a write outside the slice; and compressing sync-ps replicas still receive the
// same parameters, sending fewer bytes.
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "core/compress/bf16.h"
#include "core/compress/gradient_compressor.h"
#include "core/dist/local_link.h"
#include "core/dist/push_codec.h"
#include "core/dist/sync_ps_strategy.h"
#include "core/math/gemm.h"
#include "replica_harness.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace compressed_ps_test {

using namespace std::chrono_literals;

constexpr std::uint32_t kData = PsDataTag(PsRequestTag(PsMessage::kPush));
const compress::Settings kBf16{.method = compress::Method::kBf16};
const compress::Settings kTopK{.method = compress::Method::kTopK, .fraction = 0.05};

// `message` sent over an in-process link with push header `push`, received by a shard decoding as
// `hello` announced, into a slice of `size` floats.
Result<std::vector<float>> Deliver(const PsHeader& hello, const PsHeader& push,
                                   std::span<const float> message, std::size_t size) {
  Result<PushDecoder> decoder = PushDecoder::FromHello(hello, size);
  if (!decoder.ok()) return decoder.status();
  LocalLinkPair link = MakeLocalLinkPair("worker", "shard");
  std::vector<float> out(size, -1.0f);
  std::thread worker([&] { (void)link.a->Send(kData, message, Clock::now() + 5s); });
  Status got = decoder.value().Receive(*link.b, kData, push, out, Clock::now() + 5s);
  worker.join();
  if (!got.ok()) return got;
  return out;
}

// Each shard's slice of `grad` after one compressed push of it (a fresh worker: no residual).
std::vector<float> PushedOnce(const compress::Settings& settings, std::span<const float> grad,
                              int shards) {
  const std::vector<ShardRange> ranges = ShardRanges(grad.size(), shards);
  compress::GradientCompressor worker(PlanPushes(ranges, settings), settings, 0);
  std::vector<float> messages(compress::PlanSentFloats(worker.plan()));
  worker.Encode(grad, messages);
  std::vector<float> whole;
  std::size_t at = 0;
  for (const compress::TensorPlan& slice : worker.plan()) {
    PsHeader hello, push;
    AnnouncePushes(slice, hello);
    push.flags = kPsEncodedPush;
    Result<std::vector<float>> out = Deliver(
        hello, push, std::span(messages).subspan(at, slice.sent_floats), slice.tensor.count());
    BOOST_REQUIRE_MESSAGE(out.ok(), out.status().message());
    whole.insert(whole.end(), out.value().begin(), out.value().end());
    at += slice.sent_floats;
  }
  return whole;
}

BOOST_AUTO_TEST_SUITE(dist_compressed_pushes)

BOOST_AUTO_TEST_CASE(a_bf16_push_arrives_as_the_slice_rounded_to_bf16) {
  const std::vector<float> grad = testing::Input(0, 1001);
  const std::vector<float> pushed = PushedOnce(kBf16, grad, 3);
  BOOST_REQUIRE_EQUAL(pushed.size(), grad.size());
  for (std::size_t i = 0; i < grad.size(); ++i) {
    BOOST_TEST(pushed[i] == compress::RoundToBf16(grad[i]), i);
  }
}

BOOST_AUTO_TEST_CASE(a_topk_push_arrives_as_each_slices_largest_values_and_zeros) {
  const std::vector<float> grad = testing::Input(1, 1000);
  const std::vector<float> pushed = PushedOnce(kTopK, grad, 2);
  for (const ShardRange& r : ShardRanges(grad.size(), 2)) {
    float least_sent = INFINITY, most_left = 0.0f;
    std::size_t sent = 0;
    for (std::size_t i = r.begin; i < r.end; ++i) {
      if (pushed[i] == 0.0f) {
        most_left = std::max(most_left, std::abs(grad[i]));
      } else {
        ++sent;
        BOOST_TEST(pushed[i] == grad[i]);
        least_sent = std::min(least_sent, std::abs(grad[i]));
      }
    }
    BOOST_TEST(sent == 25u);  // ceil(0.05 * 500)
    BOOST_TEST(least_sent >= most_left);
  }
}

BOOST_AUTO_TEST_CASE(error_feedback_conserves_a_workers_pushed_gradients) {
  for (const compress::Settings& settings : {kBf16, kTopK}) {
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      const std::size_t n = 640;
      compress::GradientCompressor worker(PlanPushes(ShardRanges(n, 2), settings), settings, 0);
      std::vector<float> messages(compress::PlanSentFloats(worker.plan()));
      std::vector<double> sent(n, 0.0), raw(n, 0.0);
      for (std::uint32_t push = 0; push < 12; ++push) {
        const std::vector<float> grad = testing::Input(2, n, push);
        worker.Encode(grad, messages);
        std::size_t at = 0;
        for (const compress::TensorPlan& slice : worker.plan()) {
          PsHeader hello, header;
          AnnouncePushes(slice, hello);
          header.flags = kPsEncodedPush;
          Result<std::vector<float>> out =
              Deliver(hello, header, std::span(messages).subspan(at, slice.sent_floats),
                      slice.tensor.count());
          BOOST_REQUIRE(out.ok());
          for (std::size_t i = 0; i < slice.tensor.count(); ++i) {
            sent[slice.tensor.offset + i] += out.value()[i];
          }
          at += slice.sent_floats;
        }
        for (std::size_t i = 0; i < n; ++i) raw[i] += grad[i];
      }
      const std::span<const float> residual = worker.StateVectors().front();
      double worst = 0.0, held = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        held = std::max(held, std::abs(static_cast<double>(residual[i])));
        worst = std::max(
            worst, std::abs(sent[i] + residual[i] - raw[i]) / std::max(1.0, std::abs(raw[i])));
      }
      BOOST_TEST(held > 0.0);    // something was held back, and is accounted for
      BOOST_TEST(worst < 1e-5);  // relative, to float rounding
    }
  }
}

BOOST_AUTO_TEST_CASE(malformed_encodings_are_refused_naming_what_is_wrong) {
  PsHeader both, none, zero, too_many, sparse, encoded;
  both.flags = kPsBf16Pushes | kPsSparsePushes;
  zero.flags = too_many.flags = sparse.flags = kPsSparsePushes;
  too_many.rows = 11;
  sparse.rows = 2;
  encoded.flags = kPsEncodedPush;
  BOOST_TEST(PushDecoder::FromHello(both, 10).status().message() ==
             "a hello announcing both bf16 and sparse pushes");
  BOOST_TEST(PushDecoder::FromHello(zero, 10).status().message() ==
             "compressed pushes of 0 pairs for a slice of 10 floats");
  BOOST_TEST(!PushDecoder::FromHello(too_many, 10).ok());
  const std::vector<float> pair_outside = {std::bit_cast<float>(3u), std::bit_cast<float>(10u),
                                           1.0f, 2.0f};
  BOOST_TEST(Deliver(sparse, encoded, pair_outside, 10).status().message() ==
             "a compressed push's pair 1 has index 10, outside the slice of 10 floats");
  BOOST_TEST(Deliver(none, encoded, pair_outside, 10).status().message() ==
             "an encoded push where the hello announced none");
  // An encoded push of the wrong length is the link's error, as any message of the wrong length.
  BOOST_TEST(!Deliver(sparse, encoded, std::span(pair_outside).first(2), 10).ok());
}

// N sync-ps replicas (threads) compressing their pushes to K shards (threads): each's final
// parameters and communication.
struct Run {
  std::vector<std::vector<float>> finals;
  std::vector<train::CommStats> comm;
};
Run RunSyncPs(const compress::Settings& settings, int workers, int shards) {
  math::SetBlasThreads(1);
  const model::Model model(testing::SmallSpec());
  const data::Dataset set = testing::Blobs(960);
  const testing::PsLinks links = testing::MakeLocalPsLinks(workers, shards);
  const optim::OptimizerOptions sgd;
  auto servers = testing::MakeShards(model, 4, workers, shards, PsMode::kSync, sgd);
  Run run;
  run.finals.resize(static_cast<std::size_t>(workers));
  run.comm.resize(static_cast<std::size_t>(workers));
  std::vector<Status> failures(static_cast<std::size_t>(workers));
  const std::vector<Status> served =
      testing::ServePs(links, servers, [&](int rank, std::span<Link* const> mine) {
        SyncPsStrategy ps(mine, model.NumParams(),
                          {.rank = rank, .workers = workers, .compression = settings});
        Result<std::vector<float>> final = testing::TrainWithStrategy(
            model, set, testing::GlobalBatchOptions(16, rank, workers, 1), ps,
            [&](std::span<float> params) { return ps.Connect(params, 0); });
        if (Status bye = ps.Finish(); final.ok() && !bye.ok()) final = bye;
        if (final.ok()) run.finals[rank] = final.value();
        failures[rank] = final.status();
        run.comm[rank] = ps.Stats();
      });
  for (const Status& s : served) BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
  for (const Status& s : failures) BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
  return run;
}

BOOST_AUTO_TEST_CASE(compressing_sync_ps_replicas_receive_the_same_parameters_for_fewer_bytes) {
  const Run plain = RunSyncPs({}, 2, 2);
  BOOST_TEST(!plain.comm[0].compressed);
  for (const compress::Settings& settings : {kBf16, kTopK}) {
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      const Run run = RunSyncPs(settings, 2, 2);
      BOOST_TEST((run.finals[1] == run.finals[0]));
      BOOST_TEST((run.finals[0] != plain.finals[0]));  // compression changed what was applied
      const train::CommStats& c = run.comm[0];
      BOOST_TEST(c.compressed);
      BOOST_TEST(c.bytes_sent < plain.comm[0].bytes_sent);
      // What it would have sent uncompressed is what the plain run sent: the same messages.
      BOOST_TEST(c.uncompressed_bytes == plain.comm[0].bytes_sent);
    }
  }
}

BOOST_AUTO_TEST_CASE(powersgd_is_refused_for_pushes) {
  const testing::PsLinks links = testing::MakeLocalPsLinks(1, 1);
  PsClient client(links.worker[0],
                  {.num_params = 10, .compression = {.method = compress::Method::kPowerSgd}});
  const Status refused = client.Hello({});
  BOOST_TEST(refused.message() ==
             "worker rank 0: compression \"powersgd\" does not apply to pushes");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace compressed_ps_test
}  // namespace dtrain::dist
