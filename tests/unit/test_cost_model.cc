// The cost model (src/tuning/): its wire plan gives exactly the bytes each preset's calls count,
// the shape it predicts matches what the calls select where the selection is fixed, and the link
// model's textbook costs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "algorithms/algorithm.h"
#include "support/sparse_runs.h"
#include "tuning/call_shape.h"
#include "tuning/cost_model.h"
#include "tuning/link_model.h"
#include "tuning/wire_plan.h"

using namespace sccl_test;

namespace {

sccl::ResolvedSparseConfig resolved(const scclSparseConfig_t& config) {
  sccl::ResolvedSparseConfig out;
  REQUIRE(sccl::resolveSparseConfig(config, &out) == scclSuccess);
  return out;
}

// The shape of a call as rank `rank` reported it, and whether that rank was a broadcast root.
sccl::CallShape reportedShape(const RankIteration& record, size_t count, int nranks) {
  sccl::CallShape s;
  s.count = count;
  s.dtype = scclFloat32;
  s.nranks = nranks;
  s.k_target = record.stats.kTarget;
  s.k_global = record.stats.kGlobal;
  s.k_max = record.stats.kMax;
  s.k_sole = *std::max_element(record.counts.begin(), record.counts.end());
  return s;
}

}  // namespace

TEST_CASE("the wire plan of each call's reported shape gives the bytes the call counted",
          "[tuning][cost_model]") {
  const size_t count = 3001;
  GradientFn gradient = [](int r, uint64_t t, size_t i) { return gradientValue(29, r, t, i); };
  for (const sccl::PresetEntry& preset : sccl::presetRegistry()) {
    for (int nranks : {1, 2, 3, 4}) {
      for (double density : {0.01, 0.1}) {
        const scclSparseConfig_t config = sparseConfig(preset.name, density);
        const sccl::ResolvedSparseConfig c = resolved(config);
        SparseRun run = runSparse(nranks, count, config, 5, gradient);
        REQUIRE_NO_RANK_FAILURES(run.failures);
        for (size_t t = 0; t < run.calls.size(); ++t) {
          for (int r = 0; r < nranks; ++r) {
            const RankIteration& record = run.calls[t][size_t(r)];
            REQUIRE(record.result == scclSuccess);
            sccl::CallShape shape = reportedShape(record, count, nranks);
            // A CLT-k leader is the one rank with a count; it is the broadcast's root.
            const bool root = record.counts[size_t(r)] == shape.k_sole && shape.k_sole > 0;
            bool matched = false;
            for (int rounds : {1, 2}) {  // the density correction counts once or twice
              shape.correction_rounds = rounds;
              const sccl::WireBytes planned =
                  sccl::planWireBytes(sccl::planCall(c, shape), nranks, root);
              matched = matched || (planned.sent == record.stats.bytesSent &&
                                    planned.received == record.stats.bytesReceived);
            }
            INFO(preset.name << " n=" << nranks << " density " << density << " call " << t
                             << " rank " << r << ": sent " << record.stats.bytesSent
                             << " received " << record.stats.bytesReceived);
            CHECK(matched);
          }
        }
      }
    }
  }
}

TEST_CASE("the predicted shape is what fixed selections send", "[tuning][cost_model]") {
  const size_t count = 4099;
  GradientFn gradient = [](int r, uint64_t t, size_t i) { return gradientValue(31, r, t, i); };
  for (const char* preset : {"dense", "micro_sync_free", "exdyna_sync_free", "s2", "topk"}) {
    for (int nranks : {2, 4}) {
      const scclSparseConfig_t config = sparseConfig(preset, 0.02);
      const sccl::ResolvedSparseConfig c = resolved(config);
      // The default assumptions: balanced ranges, independent whole-vector choices.
      const sccl::CallShape predicted =
          sccl::predictCallShape(c, count, scclFloat32, nranks, sccl::ShapeAssumptions{});
      const sccl::WireBytes planned =
          sccl::planWireBytes(sccl::planCall(c, predicted), nranks, false);
      SparseRun run = runSparse(nranks, count, config, 3, gradient);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      for (const RankIteration& record : run.calls.back()) {
        INFO(preset << " n=" << nranks);
        CHECK(record.stats.kTarget == predicted.k_target);
        if (std::string(preset) == "topk") {
          // Independent data: the union of the ranks' top-k is near count (1 - (1 - d)^n),
          // and never above n k.
          CHECK(double(record.stats.kGlobal) >= 0.9 * double(predicted.k_global));
          CHECK(double(record.stats.kGlobal) <= 1.1 * double(predicted.k_global));
          CHECK(record.stats.kGlobal <= uint64_t(nranks) * predicted.k_target);
        } else {
          CHECK(record.stats.bytesSent == planned.sent);
          CHECK(record.stats.bytesReceived == planned.received);
        }
      }
    }
  }
}

TEST_CASE("the predicted shape of the exclusive and whole-vector searches", "[tuning][cost_model]") {
  const sccl::ResolvedSparseConfig micro = resolved(sparseConfig("micro", 0.01));
  sccl::ShapeAssumptions assume;
  assume.gather_inflation = 1.5;
  sccl::CallShape s = sccl::predictCallShape(micro, 1000000, scclFloat32, 8, assume);
  CHECK(s.k_target == 10000);
  CHECK(s.k_global == 10000);
  CHECK(s.k_max == 1875);  // 1.5 * 10000 / 8
  const sccl::ResolvedSparseConfig topk = resolved(sparseConfig("topk", 0.01));
  s = sccl::predictCallShape(topk, 1000000, scclFloat32, 8, sccl::ShapeAssumptions{});
  // Independent choices: 1e6 (1 - 0.99^8) = 77255.2...
  CHECK(s.k_global == 77256);
  CHECK(s.k_max == 10000);
  assume = {};
  assume.union_factor = 1.0;  // every rank chose the same entries
  s = sccl::predictCallShape(topk, 1000000, scclFloat32, 8, assume);
  CHECK(s.k_global == 10000);
  // SIDCo's count check brings each rank's selection to k, as Top-k's.
  const sccl::ResolvedSparseConfig sidco = resolved(sparseConfig("sidco", 0.01));
  s = sccl::predictCallShape(sidco, 1000000, scclFloat32, 8, sccl::ShapeAssumptions{});
  CHECK(s.k_global == 77256);
  CHECK(s.k_max == 10000);
  const sccl::ResolvedSparseConfig cltk = resolved(sparseConfig("cltk", 0.01));
  s = sccl::predictCallShape(cltk, 1000000, scclFloat32, 8, sccl::ShapeAssumptions{});
  CHECK(s.k_sole == 10000);
  CHECK(s.k_global == 10000);
  // The plan of CLT-k broadcasts the leader's indices instead of all-gathering them.
  const auto plan = sccl::planCall(cltk, s);
  REQUIRE(plan.size() == 3);
  CHECK(plan[1].kind == sccl::CollectiveKind::kBroadcast);
  CHECK(plan[1].bytes == 80000);
}

TEST_CASE("float64 values travel as float64, every other type as float32", "[tuning][cost_model]") {
  const sccl::ResolvedSparseConfig micro = resolved(sparseConfig("micro_sync_free", 0.01));
  for (scclDataType_t dtype : {scclFloat64, scclFloat32, scclBfloat16, scclFloat16}) {
    const sccl::CallShape s =
        sccl::predictCallShape(micro, 100000, dtype, 4, sccl::ShapeAssumptions{});
    const auto plan = sccl::planCall(micro, s);
    REQUIRE(plan.size() == 2);
    // capacity = ceil(1000 / 4 * 1.25) = 313 slots per rank
    CHECK(plan[1].bytes == 4 * 313 * (dtype == scclFloat64 ? 8u : 4u));
  }
  const sccl::ResolvedSparseConfig dense = resolved(sparseConfig("dense", 0.01));
  const sccl::CallShape s =
      sccl::predictCallShape(dense, 1000, scclBfloat16, 4, sccl::ShapeAssumptions{});
  CHECK(sccl::planCall(dense, s).back().bytes == 2000);  // the data's own type
}

TEST_CASE("the link model's textbook costs", "[tuning][cost_model]") {
  const sccl::LinkModel link{1e-5, 1e9};
  const sccl::PlannedCollective gather{sccl::CollectiveKind::kAllGather, 1000000, "x"};
  const sccl::PlannedCollective reduce{sccl::CollectiveKind::kAllReduce, 8000000, "x"};
  const sccl::PlannedCollective small{sccl::CollectiveKind::kAllReduce, 8, "x"};
  const sccl::PlannedCollective bcast{sccl::CollectiveKind::kBroadcast, 8000000, "x"};
  CHECK(sccl::collectiveSeconds(gather, 1, link) == 0);
  // 8 ranks: ring 7 (1e-5 + 1e-3) = 7.07e-3 against recursive doubling 3e-5 + 7e-3.
  CHECK(sccl::collectiveSeconds(gather, 8, link) == Approx(7.03e-3));
  // Rabenseifner: 2 * 3 * 1e-5 + 2 * 7/8 * 8e-3 = 14.06e-3.
  CHECK(sccl::collectiveSeconds(reduce, 8, link) == Approx(14.06e-3));
  // A small all-reduce is latency: recursive doubling 3 (1e-5 + 8e-9).
  CHECK(sccl::collectiveSeconds(small, 8, link) == Approx(3 * (1e-5 + 8e-9)));
  // Broadcast: scatter + all-gather (3 + 7) 1e-5 + 2 * 7/8 * 8e-3 = 14.1e-3 < binomial 24.03e-3.
  CHECK(sccl::collectiveSeconds(bcast, 8, link) == Approx(14.1e-3));
  // A non-power-of-two rank count rounds the steps up: 5 ranks take 3.
  CHECK(sccl::collectiveSeconds(small, 5, link) == Approx(3 * (1e-5 + 8e-9)));
  // The messages each rank sends in the algorithm chosen: recursive doubling's log2 n steps.
  CHECK(sccl::collectiveCost(gather, 8, link).messages == 3);
  CHECK(sccl::collectiveCost(small, 8, link).messages == 3);
  CHECK(sccl::collectiveCost(gather, 1, link).messages == 0);
}

TEST_CASE("a predicted call adds its collectives and its local work", "[tuning][cost_model]") {
  const sccl::ResolvedSparseConfig dense = resolved(sparseConfig("dense", 0.01));
  const sccl::CallShape s =
      sccl::predictCallShape(dense, 1000000, scclFloat32, 4, sccl::ShapeAssumptions{});
  const sccl::LinkModel link{2e-6, 1.25e8};  // 1 Gbit/s
  const sccl::CallPrediction p = sccl::predictCall(dense, s, link, {1e-9, 1});
  CHECK(p.collectives == 2);
  CHECK(p.compute_seconds == Approx(1e-3));
  // header: recursive doubling 2 (2e-6) + 3 * 32 / 1.25e8; gradient: Rabenseifner 2 * 2 * 2e-6 +
  // 1.5 * 4e6 / 1.25e8
  CHECK(p.comm_seconds == Approx(4e-6 + 96 / 1.25e8 + 8e-6 + 6e6 / 1.25e8));
  CHECK(p.seconds == Approx(p.comm_seconds + p.compute_seconds));
  CHECK(p.bytes.sent == 32 + 6000000);
  CHECK(p.bytes.received == 96 + 6000000);
  // Four ranks on the calibrated machine share its cores: four times the local work.
  CHECK(sccl::predictCall(dense, s, link, {1e-9, 4}).compute_seconds == Approx(4e-3));
}

TEST_CASE("ranks sharing a machine: local work always, the transport's host work where it shares "
          "the cores",
          "[tuning][cost_model]") {
  const sccl::ResolvedSparseConfig micro = resolved(sparseConfig("micro", 0.01));
  const sccl::CallShape s =
      sccl::predictCallShape(micro, 1000000, scclFloat32, 8, sccl::ShapeAssumptions{});
  const sccl::LinkModel link{30e-6, 1.25e8};
  const sccl::CallPrediction alone = sccl::predictCall(micro, s, link, {1e-9, 1});
  const sccl::CallPrediction shared = sccl::predictCall(micro, s, link, {1e-9, 4});
  CHECK(alone.comm_seconds > 0);
  CHECK(shared.comm_seconds == alone.comm_seconds);
  CHECK(shared.compute_seconds == Approx(4 * alone.compute_seconds));
  // Host work per message: charged once per message, 4 times where 4 ranks share the cores.
  sccl::LocalWork per_message{1e-9, 4, false};
  per_message.transport_seconds_per_message = 1e-4;
  const sccl::CallPrediction own_cores = sccl::predictCall(micro, s, link, per_message);
  CHECK(alone.messages > 0);
  CHECK(own_cores.comm_seconds == Approx(alone.comm_seconds + 1e-4 * double(alone.messages)));
  per_message.transport_shares_cores = true;
  const sccl::CallPrediction transport = sccl::predictCall(micro, s, link, per_message);
  CHECK(transport.comm_seconds == Approx(alone.comm_seconds + 4e-4 * double(alone.messages)));
  CHECK(transport.compute_seconds == shared.compute_seconds);
  CHECK(transport.seconds == Approx(transport.comm_seconds + transport.compute_seconds));
  // Host work per byte overlaps the wire: the slower of the two counts.
  sccl::LocalWork per_byte{1e-9, 4, true};
  per_byte.transport_seconds_per_byte = 1e-12;  // far faster than the 1 Gbit/s wire
  CHECK(sccl::predictCall(micro, s, link, per_byte).comm_seconds == Approx(alone.comm_seconds));
  per_byte.transport_seconds_per_byte = 1e-7;  // far slower
  const double moved = double(alone.bytes.sent + alone.bytes.received);
  CHECK(sccl::predictCall(micro, s, link, per_byte).comm_seconds == Approx(4 * 1e-7 * moved));
  // One rank per machine: the flag changes nothing.
  CHECK(sccl::predictCall(micro, s, link, {1e-9, 1, true}).seconds == alone.seconds);
}

TEST_CASE("the local work per entry grows with the entries each rank receives and aggregates",
          "[tuning][cost_model]") {
  const sccl::LinkModel link{30e-6, 1.25e8};
  const uint64_t count = 1000000;
  sccl::LocalWork work{1e-9, 2};
  work.seconds_per_entry = 1e-8;
  // Exclusive ranges: (n - 1) max k_i received + k' scattered; max k_i = k / n when balanced.
  const sccl::ResolvedSparseConfig micro = resolved(sparseConfig("micro", 0.01));
  const sccl::CallShape m = sccl::predictCallShape(micro, count, scclFloat32, 8, {});
  const sccl::CallPrediction pm = sccl::predictCall(micro, m, link, work);
  CHECK(pm.entries == 7 * m.k_max + m.k_global);
  CHECK(pm.aggregate_seconds == Approx(2 * 1e-8 * double(pm.entries)));
  CHECK(pm.seconds == Approx(pm.comm_seconds + pm.compute_seconds + pm.aggregate_seconds));
  // Whole-vector selection: every rank's k received, then the n overlapping lists merged pairwise
  // (ceil(log2 n) rounds over n max k_i entries); grows faster than the ranks.
  const sccl::ResolvedSparseConfig topk = resolved(sparseConfig("topk", 0.01));
  const sccl::CallShape t1 = sccl::predictCallShape(topk, count, scclFloat32, 1, {});
  const sccl::CallShape t4 = sccl::predictCallShape(topk, count, scclFloat32, 4, {});
  const sccl::CallShape t5 = sccl::predictCallShape(topk, count, scclFloat32, 5, {});
  const sccl::CallShape t8 = sccl::predictCallShape(topk, count, scclFloat32, 8, {});
  CHECK(sccl::planAggregatedEntries(topk, t1) == t1.k_global);
  CHECK(sccl::planAggregatedEntries(topk, t4) == 3 * t4.k_max + t4.k_global + 4 * t4.k_max * 2);
  CHECK(sccl::planAggregatedEntries(topk, t5) == 4 * t5.k_max + t5.k_global + 5 * t5.k_max * 3);
  CHECK(sccl::planAggregatedEntries(topk, t8) == 7 * t8.k_max + t8.k_global + 8 * t8.k_max * 3);
  CHECK(sccl::planAggregatedEntries(topk, t8) > 2 * sccl::planAggregatedEntries(topk, t4));
  // CLT-k: the leader's k received and scattered.
  const sccl::ResolvedSparseConfig cltk = resolved(sparseConfig("cltk", 0.01));
  const sccl::CallShape c = sccl::predictCallShape(cltk, count, scclFloat32, 8, {});
  CHECK(sccl::planAggregatedEntries(cltk, c) == 2 * c.k_target);
  // The sketch: the union of the ranks' marked blocks, at most n blocks' worth, at least one.
  const sccl::ResolvedSparseConfig s2 = resolved(sparseConfig("s2", 0.01));
  const sccl::CallShape k = sccl::predictCallShape(s2, count, scclFloat32, 8, {});
  CHECK(k.k_union >= k.k_max);
  CHECK(k.k_union <= 8 * k.k_max);
  CHECK(sccl::planAggregatedEntries(s2, k) == k.k_union);
  // Dense aggregates nothing one entry at a time.
  const sccl::ResolvedSparseConfig dense = resolved(sparseConfig("dense", 0.01));
  const sccl::CallShape d = sccl::predictCallShape(dense, count, scclFloat32, 8, {});
  CHECK(sccl::predictCall(dense, d, link, work).aggregate_seconds == 0);
}
