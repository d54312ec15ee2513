// sluice_sim_perf_fit: re-fits the analytic performance model from the shared profile tables and
// prints the constants and fit errors quoted in docs/perf-model.md. Reads files (hence in sim, not
// core); the fitting itself is core/perf/perf_fit.h. Single-threaded command-line tool.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include "core/perf/analytic_latency_model.h"
#include "core/perf/builtin_models.h"
#include "core/perf/perf_fit.h"
#include "core/perf/perf_model.h"
#include "core/perf/profile_parsers.h"
#include "core/perf/table_latency_model.h"
#include "sim/perf_fit/llm_fit.h"
#include "sim/workload/file_io.h"

namespace sluice::sim {
namespace {

using core::FitError;
using core::ProfilePoint;

std::string DataDir(int argc, char** argv) {
  if (argc > 1)
    return argv[1];
  if (const char* d = std::getenv("SLUICE_DATA_DIR"))
    return d;
  if (const char* s = std::getenv("SLUICE_SOURCE_DIR"))
    return absl::StrCat(s, "/../shared/data");
  return "../shared/data";
}

void Die(const absl::Status& s) {
  std::fprintf(stderr, "sluice_sim_perf_fit: %s\n", s.ToString().c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> v) {
  if (!v.ok())
    Die(v.status());
  return *std::move(v);
}

std::string Err(const FitError& e) {
  return absl::StrCat("MAPE ", absl::SixDigits(e.mape), "%  max ", absl::SixDigits(e.max_ape),
                      "%  (n=", e.points, ")");
}

void PrintSpatial(const std::string& name, const core::SpatialParams& p) {
  std::printf("    {\"%s\", {%.6g, %.6g, %.6g, %.6g, %.6g, %.6g, %.6g}},\n", name.c_str(), p.t0_s,
              p.t1_s, p.gamma, p.s0, p.beta, p.alpha, p.p);
}

std::vector<ProfilePoint> Only(const std::vector<ProfilePoint>& pts, const std::string& model) {
  std::vector<ProfilePoint> out;
  for (const ProfilePoint& p : pts) {
    if (p.model == model)
      out.push_back(p);
  }
  return out;
}

struct Tables {
  std::vector<std::pair<std::string, std::vector<ProfilePoint>>> dilu;  // catalogue name, points
  std::vector<ProfilePoint> gpulet;
  std::vector<core::InterferencePoint> interference;
  std::vector<ProfilePoint> rapp;
  std::vector<core::VidurLayerTime> vidur_llama2_7b;
};

Tables Load(const std::string& dir) {
  Tables t;
  const std::vector<std::pair<std::string, std::string>> dilu = {{"resnet152", "resnet152"},
                                                                 {"bert-base", "bert_base"},
                                                                 {"roberta-large", "roberta_large"},
                                                                 {"gpt2-large", "gpt2_large"},
                                                                 {"llama2-7b", "llama2"}};
  for (const auto& [name, file] : dilu) {
    std::string path = absl::StrCat(dir, "/dilu-artifacts/profiles_bs_sm/bs_sm_", file, ".csv");
    t.dilu.emplace_back(name,
                        OrDie(core::ParseDiluProfile(OrDie(ReadFileMaybeXz(path)), path, name)));
  }
  std::string g = absl::StrCat(dir, "/gpulet-reimpl-profiles/");
  t.gpulet = OrDie(
      core::ParseGpuletInference(OrDie(ReadFileMaybeXz(g + "inference.csv")), g + "inference.csv"));
  t.interference = OrDie(core::ParseGpuletInterference(
      OrDie(ReadFileMaybeXz(g + "interference.csv")), g + "interference.csv"));
  std::string r = absl::StrCat(dir, "/rapp-hasgpu-v100-sm-quota-profiles/",
                               "rapp_latency_sm_quota_batch.csv.xz");
  t.rapp = OrDie(core::ParseRappProfiles(OrDie(ReadFileMaybeXz(r)), r));
  std::string v = absl::StrCat(dir, "/vidur-profiling-subset/compute/a100/meta-llama/",
                               "Llama-2-7b-hf/mlp.csv.xz");
  t.vidur_llama2_7b = OrDie(core::ParseVidurMlp(OrDie(ReadFileMaybeXz(v)), v));
  return t;
}

// Geometric mean of a/b over the (batch, share) points both tables measured.
double GpuScale(const std::vector<ProfilePoint>& a, const std::vector<ProfilePoint>& b) {
  double log_sum = 0;
  int n = 0;
  for (const ProfilePoint& p : a) {
    for (const ProfilePoint& q : b) {
      if (p.batch == q.batch && std::abs(p.sm_share - q.sm_share) < 1e-9) {
        log_sum += std::log(p.latency_s / q.latency_s);
        ++n;
      }
    }
  }
  return n > 0 ? std::exp(log_sum / n) : 1.0;
}

void FitSpatialTables(const Tables& t) {
  std::printf(
      "== Spatial fits (t(b,s) = (t0 + t1 b^gamma) (1 + (s0 b^beta / s)^(p alpha))^(1/p))\n");
  std::printf("   constants as in builtin_models.cc: {t0_s, t1_s, gamma, s0, beta, alpha, p}\n");
  for (const auto& [name, pts] : t.dilu) {
    core::SpatialParams sp = OrDie(core::FitSpatial(pts));
    PrintSpatial(name, sp);
    core::AnalyticParams ap;
    ap.spatial = sp;
    core::AnalyticLatencyModel m(ap);
    auto table = OrDie(core::TableLatencyModel::Create(pts));
    std::printf("      fit vs Dilu table: %s;  monotone table vs raw rows: %s, %d cells adjusted\n",
                Err(core::MeasureFit(m, pts)).c_str(), Err(core::MeasureFit(*table, pts)).c_str(),
                table->adjusted_cells());
  }
  for (const std::string name : {"vgg19", "resnet152"}) {
    std::vector<ProfilePoint> pts = Only(t.gpulet, name);
    core::SpatialParams sp = OrDie(core::FitSpatial(pts));
    PrintSpatial(absl::StrCat(name, " (gpulet GPU)"), sp);
    core::AnalyticParams ap;
    ap.spatial = sp;
    core::AnalyticLatencyModel m(ap);
    std::printf("      fit vs gpulet %s rows: %s\n", name.c_str(),
                Err(core::MeasureFit(m, pts)).c_str());
  }
  double k = GpuScale(t.dilu[0].second, Only(t.gpulet, "resnet152"));
  std::printf(
      "   GPU time scale Dilu/gpulet (resnet152, geometric mean over shared points): %.6g\n", k);
}

void PrintQuota(const std::string& name, const core::QuotaParams& q) {
  std::printf("    {\"%s\", {%.6g, %.6g, %.6g, %.6g}},\n", name.c_str(), q.omega, q.delta, q.eta,
              q.r);
}

void FitQuotaTable(const Tables& t) {
  std::printf("== Quota fits (RaPP): {omega, delta, eta, r}\n");
  core::QuotaFit q = OrDie(core::FitQuota(t.rapp));
  PrintQuota("global (all 69 models)", q.params);
  std::printf("      error over quota < 1 rows: %s\n", Err(q.error).c_str());
  for (const std::string name : {"resnet152", "vgg19"}) {
    std::vector<ProfilePoint> rows = Only(t.rapp, name);
    core::QuotaFit own = OrDie(core::FitQuota(rows, 1.0));
    PrintQuota(name, own.params);
    std::printf("      own fit on its rows: %s;  global params on its rows: %s\n",
                Err(own.error).c_str(), Err(core::MeasureQuotaFit(q.params, rows)).c_str());
  }
}

void FitKappa(const Tables& t) {
  core::KappaFit k = OrDie(core::FitInterferenceKappa(t.gpulet, t.interference));
  std::printf("== Interference: kappa = %.6g; mean measured slowdown %.4g; %s; unmatched %d\n",
              k.kappa, k.mean_slowdown, Err(k.error).c_str(), k.unmatched);
  for (const std::string b : {"vgg19", "resnet50", "densenet121", "inception", "mobilenet"}) {
    std::vector<core::InterferencePoint> sub;
    for (const auto& p : t.interference) {
      if (p.model_b == b)
        sub.push_back(p);
    }
    core::KappaFit kb = OrDie(core::FitInterferenceKappa(t.gpulet, sub));
    std::printf("   co-runner %-12s kappa %.4g  mean slowdown %.4g\n", b.c_str(), kb.kappa,
                kb.mean_slowdown);
  }
}

void FitPrefill(const Tables& t) {
  double c = OrDie(core::FitPrefillPerToken(t.vidur_llama2_7b, 32));
  std::printf("== Prefill (Vidur A100 Llama-2-7b, 32 layers, linear ops): %.6g s/token\n", c);
}

void CheckBuiltIn(const Tables& t) {
  std::unique_ptr<core::PerfModel> pm = core::PerfModel::BuiltIn();
  std::printf("== Shipped catalogue (PerfModel::BuiltIn) vs tables\n");
  for (const auto& [name, pts] : t.dilu) {
    const core::ModelEntry* e = OrDie(pm->Find(name));
    std::printf("   %-14s vs Dilu bs_sm: %s\n", name.c_str(),
                Err(core::MeasureFit(*e->latency, pts)).c_str());
  }
  const core::ModelEntry* vgg = OrDie(pm->Find("vgg19"));
  std::vector<ProfilePoint> vgg_rows = Only(t.gpulet, "vgg19");
  double k = GpuScale(t.dilu[0].second, Only(t.gpulet, "resnet152"));
  for (ProfilePoint& p : vgg_rows)
    p.latency_s *= k;
  std::printf("   %-14s vs gpulet vgg19 x %.4g: %s\n", "vgg19", k,
              Err(core::MeasureFit(*vgg->latency, vgg_rows)).c_str());
  for (const core::BuiltInModel& m : core::BuiltInModels()) {
    std::vector<ProfilePoint> rows = Only(t.rapp, m.info.name);
    if (rows.empty())
      continue;
    std::printf("   %-14s quota term vs RaPP rows: %s\n", m.info.name.c_str(),
                Err(core::MeasureQuotaFit(m.params.quota, rows)).c_str());
  }
  std::printf("   interference kappa shipped: %.6g\n", pm->interference_kappa());
}

}  // namespace
}  // namespace sluice::sim

int main(int argc, char** argv) {
  using namespace sluice::sim;
  std::string dir = DataDir(argc, argv);
  std::printf("data: %s\n", dir.c_str());
  if (argc > 2 && std::string(argv[2]) == "--llm-only") {
    absl::Status s = FitLlmTables(dir);
    if (!s.ok())
      Die(s);
    return 0;
  }
  Tables t = Load(dir);
  FitSpatialTables(t);
  FitQuotaTable(t);
  FitKappa(t);
  FitPrefill(t);
  CheckBuiltIn(t);
  if (absl::Status s = FitLlmTables(dir); !s.ok())
    Die(s);
  return 0;
}
