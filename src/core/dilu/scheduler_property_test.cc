// Property tests for DiluScheduler over seeded random clusters, configs and place / re-quota /
// remove sequences: caps and memory are never exceeded, every placement fits, same-node demands
// stay on one node, and (for demands placed GPU by GPU) the indexed choice equals a brute-force
// reading of Algorithm 1 over ClusterState. The seed is in every failure message.
#include <algorithm>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "core/dilu/scheduler.h"

namespace sluice::core {
namespace {

struct Case {
  std::unique_ptr<ClusterState> state;
  std::unique_ptr<DiluScheduler> sched;
  SchedulerConfig config;
};

Case RandomCase(std::mt19937_64& rng) {
  auto uni = [&](double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(rng);
  };
  auto pick = [&](int a, int b) {
    return std::uniform_int_distribution<int>(a, b)(rng);
  };
  Case c;
  ClusterSpec spec;
  const int nodes = pick(1, 6);
  for (int n = 0; n < nodes; ++n) {
    NodeSpec node;
    node.name = absl::StrCat("n", n);
    node.gpu_count = pick(2, 8);
    node.gpu.memory = Bytes::GiB(pick(0, 3) == 0 ? 80 : 40);
    spec.nodes.push_back(node);
  }
  c.state = std::make_unique<ClusterState>(spec);
  c.config.alpha = uni(0, 1);
  c.config.beta = uni(0.05, 1);
  c.config.omega = pick(0, 1) ? 1.0 : 1.2;
  c.config.gamma = c.config.omega + uni(0, 1);
  c.config.resource_complementarity = pick(0, 3) != 0;
  c.config.workload_affinity = pick(0, 3) != 0;
  c.config.affinity = pick(0, 1) ? AffinityKind::kSameFunction : AffinityKind::kPartnerWorkers;
  c.config.node_candidates = pick(1, 8);
  c.sched = *DiluScheduler::Create(c.config);
  return c;
}

InstanceDemand RandomDemand(std::mt19937_64& rng, int instance) {
  auto uni = [&](double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(rng);
  };
  auto pick = [&](int a, int b) {
    return std::uniform_int_distribution<int>(a, b)(rng);
  };
  InstanceDemand d;
  d.instance = InstanceId(instance);
  d.function = FunctionId(pick(1, 8));
  const int kind = pick(0, 9);
  d.kind = kind < 2   ? FunctionKind::kTraining
           : kind < 4 ? FunctionKind::kLlmInference
                      : FunctionKind::kInference;
  d.gpus = d.kind == FunctionKind::kInference ? 1 : pick(1, 4);
  d.same_node = d.kind == FunctionKind::kTraining && pick(0, 1);
  d.quota.request = std::round(uni(0.05, 0.8) * 100) / 100;  // profiled shares are on a grid
  d.quota.limit = std::min(1.0, d.quota.request * uni(1, 2));
  d.memory_per_gpu = Bytes::GiB(uni(0.5, d.kind == FunctionKind::kLlmInference ? 35 : 15));
  return d;
}

// Algorithm 1 for one GPU, straight over ClusterState. Returns -1 when nothing fits.
struct Reference {
  const DiluScheduler& s;
  const ClusterState& st;
  const InstanceDemand& d;
  Room need;
  std::set<int> excluded;

  bool Llm() const { return d.kind == FunctionKind::kLlmInference && d.gpus > 1; }
  double Key(const GpuState& g) const {
    if (!s.config().resource_complementarity)
      return static_cast<double>(g.id.value());
    if (Llm())
      return -static_cast<double>(g.memory_free().count());
    return s.Score(g, need);
  }
  std::set<int> AffinityGpus() const {
    std::set<int> own, out;
    for (const GpuState& g : st.gpus()) {
      for (const Allocation& a : g.allocations) {
        if (a.function == d.function)
          own.insert(static_cast<int>(g.id.value()));
      }
    }
    if (s.config().affinity == AffinityKind::kSameFunction)
      return own;
    for (int g : own) {
      for (const Allocation& a : st.gpu(GpuId(g)).allocations) {
        if (a.function == d.function)
          continue;
        for (GpuId sib : st.GpusOf(a.instance)) {
          if (st.GpusOf(a.instance).size() > 1 && !own.contains(sib.value()))
            out.insert(sib.value());
        }
      }
    }
    return out;
  }
  int BestAmong(const std::vector<int>& gpus) const {
    int best = -1;
    double best_key = 0;
    for (int g : gpus) {
      const GpuState& gs = st.gpu(GpuId(g));
      if (excluded.contains(g) || !Fits(s.RoomOf(gs), need))
        continue;
      const double k = Key(gs);
      if (best < 0 || k < best_key - 1e-12 || (std::abs(k - best_key) <= 1e-12 && g < best)) {
        best = g;
        best_key = k;
      }
    }
    return best;
  }
  int Tier(int g) const {
    if (!st.gpu(GpuId(g)).active())
      return 2;
    return s.config().workload_affinity && AffinityGpus().contains(g) ? 0 : 1;
  }
  int PickOne() const {
    std::vector<int> wa, act, idle;
    const std::set<int> aff = AffinityGpus();
    for (const GpuState& g : st.gpus()) {
      const int id = static_cast<int>(g.id.value());
      if (!g.active()) {
        idle.push_back(id);
      } else if (s.config().workload_affinity && aff.contains(id)) {
        wa.push_back(id);
      } else {
        act.push_back(id);
      }
    }
    int g = BestAmong(wa);
    if (g < 0)
      g = BestAmong(act);
    if (g >= 0)
      return g;
    if (g < 0)
      g = BestAmong(idle);  // same keys as PickIdle: lowest id of the best GPU model
    return g;
  }
};

std::string Describe(const Case& c, const InstanceDemand& d, int got, int expected) {
  std::string out = absl::StrCat(
      "\nconfig a=", c.config.alpha, " b=", c.config.beta, " O=", c.config.omega,
      " g=", c.config.gamma, " rc=", c.config.resource_complementarity,
      " wa=", c.config.workload_affinity, " aff=", static_cast<int>(c.config.affinity),
      "\ndemand fn=", d.function.value(), " kind=", static_cast<int>(d.kind), " gpus=", d.gpus,
      " q=", d.quota.request, "/", d.quota.limit, " mem=", d.memory_per_gpu.gib());
  for (int g : {got, expected}) {
    const GpuState& gs = c.state->gpu(GpuId(g));
    absl::StrAppend(&out, "\ngpu ", g, " req=", gs.sum_request, " lim=", gs.sum_limit,
                    " mem=", gs.memory_used.gib(), "/", gs.spec.memory.gib(),
                    " active=", gs.active(), " fns=");
    for (const Allocation& a : gs.allocations)
      absl::StrAppend(&out, a.function.value(), ",");
  }
  return out;
}

void CheckInvariants(const Case& c, const std::string& where) {
  for (const GpuState& g : c.state->gpus()) {
    ASSERT_LE(g.sum_request, c.config.omega + 1e-6) << where << " gpu " << g.id;
    ASSERT_LE(g.sum_limit, c.config.gamma + 1e-6) << where << " gpu " << g.id;
    ASSERT_LE(g.memory_used, g.spec.memory) << where << " gpu " << g.id;
  }
}

// A random live instance's quota shrinks in place (parking, a vertical step), reported through
// OnRequota.
void Requota(Case& c, std::mt19937_64& rng, const std::vector<int>& live,
             const std::string& where) {
  const InstanceId id(live[std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng)]);
  std::vector<Allocation> before;
  for (GpuId g : c.state->GpusOf(id)) {
    for (const Allocation& a : c.state->gpu(g).allocations) {
      if (a.instance == id)
        before.push_back(a);
    }
  }
  SmQuota q = before.front().quota;
  q.request = std::max(1e-3, q.request * std::uniform_real_distribution<double>(0, 1)(rng));
  q.limit = std::max(q.request, q.limit * std::uniform_real_distribution<double>(0.5, 1)(rng));
  ASSERT_TRUE(c.state->UpdateQuota(id, q).ok()) << where;
  for (const Allocation& a : before) {
    Allocation after = a;
    after.quota = q;
    c.sched->OnRequota(a, after, *c.state);
  }
}

TEST(SchedulerPropertyTest, RandomClustersNeverOvercommitAndMatchBruteForce) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    Case c = RandomCase(rng);
    std::vector<int> live;
    int next_instance = 1;
    for (int step = 0; step < 200; ++step) {
      const std::string where = absl::StrCat("seed=", seed, " step=", step);
      const int op = std::uniform_int_distribution<int>(0, 9)(rng);
      if (!live.empty() && op < 3) {
        const size_t i = std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng);
        for (const Allocation& a : c.state->Remove(InstanceId(live[i]))) {
          c.sched->OnRemoved(a, *c.state);
        }
        live.erase(live.begin() + i);
        continue;
      }
      if (!live.empty() && op < 5) {
        ASSERT_NO_FATAL_FAILURE(Requota(c, rng, live, where));
        continue;
      }
      const InstanceDemand d = RandomDemand(rng, next_instance++);
      Reference ref{
          *c.sched, *c.state, d, {d.quota.request, d.quota.limit, d.memory_per_gpu.count()}, {}};
      const bool per_gpu = !d.same_node || d.gpus == 1;  // Algorithm 1's GPU-by-GPU loop
      auto placed = c.sched->Place(d, *c.state);
      if (!placed.ok()) {
        ASSERT_EQ(placed.status().code(), absl::StatusCode::kResourceExhausted) << where;
        if (per_gpu) {  // the reference must fail too, at some k
          for (int k = 0; k < d.gpus; ++k) {
            const int g = ref.PickOne();
            if (g < 0)
              break;
            ASSERT_LT(k + 1, d.gpus) << where << " reference placed it";
            ref.excluded.insert(g);
          }
        }
        continue;
      }
      ASSERT_EQ(placed->size(), size_t(d.gpus)) << where;
      std::set<int> distinct;
      for (GpuId g : *placed) {
        const GpuState& gs = c.state->gpu(g);
        ASSERT_TRUE(Fits(c.sched->RoomOf(gs), ref.need)) << where << " gpu " << g;
        if (d.same_node) {
          ASSERT_EQ(gs.node, c.state->gpu((*placed)[0]).node) << where;
        }
        distinct.insert(g.value());
        if (!per_gpu)
          continue;
        // Same choice as the reference up to floating-point ties (then either GPU is right).
        const int want = ref.PickOne();
        ASSERT_GE(want, 0) << where;
        const GpuState& ws = c.state->gpu(GpuId(want));
        ASSERT_EQ(ref.Tier(g.value()), ref.Tier(want)) << where << Describe(c, d, g.value(), want);
        ASSERT_NEAR(ref.Key(gs), ref.Key(ws), 1e-9) << where << Describe(c, d, g.value(), want);
        ref.excluded.insert(g.value());
      }
      ASSERT_EQ(distinct.size(), size_t(d.gpus)) << where;
      for (GpuId g : *placed) {
        Allocation a{d.instance, d.function, g, d.memory_per_gpu, d.quota};
        ASSERT_TRUE(c.state->Add(a).ok()) << where;
        c.sched->OnAdded(a, *c.state);
      }
      live.push_back(d.instance.value());
      CheckInvariants(c, where);
    }
  }
}

}  // namespace
}  // namespace sluice::core
