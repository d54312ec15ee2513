// QUART's Table 1 models split into pipeline stages (see pipeline_profile.h). Every number below
// is either Table 1's (size, token count, standalone exec time), a public model card's (layers,
// hidden size, dtype), or an estimate that docs/perf-model.md ("Pipeline stages") names as such.
#include "core/perf/pipeline_profile.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/perf/analytic_latency_model.h"
#include "core/perf/builtin_models.h"

namespace sluice::core {
namespace {

// The contract uses std::string_view; Debian's Abseil has its own string_view type.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Which measured latency curve (from the shared profiles, via the built-in catalogue) a model's
// stages borrow their batch / SM-share shape from.
enum class Shape {
  kComputeBoundTransformer,  // long sequences (>= 1024 positions): bert-base's near-linear batch
  kShortTransformer,         // 128-token transformers: roberta-large's sub-linear batch curve
  kCnn,                      // resnet152
};

struct ModelFacts {
  PipelineModelInfo info;
  int hidden = 0;            // width of the activation handed between layers (model card)
  int positions = 0;         // activation positions per request (tokens, frames, pixels)
  int dtype_bytes = 2;       // bytes per activation / parameter element as served
  double flops_per_param = 0;  // forward FLOPs per parameter per request (CPU slowdown estimate)
  double service_cv = 0.2;
  Shape shape = Shape::kShortTransformer;
};

ModelFacts Facts(const char* name, double size_gb, int layers, int tokens, double exec_ms,
                 int hidden, int positions, int dtype_bytes, double flops_per_param,
                 double service_cv, Shape shape) {
  ModelFacts f;
  // Table 1 gives decimal gigabytes.
  f.info = PipelineModelInfo{name, common::Bytes(static_cast<int64_t>(size_gb * 1e9)), layers,
                             tokens, absl::Microseconds(exec_ms * 1000), 8};
  f.hidden = hidden;
  f.positions = positions;
  f.dtype_bytes = dtype_bytes;
  f.flops_per_param = flops_per_param;
  f.service_cv = service_cv;
  f.shape = shape;
  return f;
}

// Sorted by name. Layers are each card's repeated blocks (all divisible by 8, so QUART's 8-stage
// split is even): Whisper large 32 encoder + 32 decoder blocks, d_model 1280, 1500 encoder
// frames per 30 s clip; BERT-21B has no public card: 64 blocks of width 5120 give
// 12 * 64 * 5120^2 = 20.1 B parameters, i.e. Table 1's 43 GB in fp16 (estimate); LLaMA-7B 32
// blocks, 4096; OPT-66B 64 blocks, 9216; WideResNet: 16 bottleneck blocks (3+4+6+3, WRN-50-2's
// layout), widened to Table 1's 16 GB (fp32, 4 G parameters: estimate), activation of a
// 28 x 28 feature map with 8192 channels (estimate). FLOPs per parameter: 2 x positions for
// transformers; 330 for the CNN (WRN-50-2: 11.4 GMAC / 68.9 M parameters x 2).
const std::vector<ModelFacts>& AllFacts() {
  static const auto* facts = new std::vector<ModelFacts>{
      Facts("bert-21b", 43, 64, 128, 137, 5120, 128, 2, 2.0 * 128, 0.2,
            Shape::kShortTransformer),
      Facts("llama-7b", 14, 32, 1024, 243, 4096, 1024, 2, 2.0 * 1024, 0.2,
            Shape::kComputeBoundTransformer),
      Facts("opt-66b", 132, 64, 128, 278, 9216, 128, 2, 2.0 * 128, 0.2,
            Shape::kShortTransformer),
      Facts("whisper-9b", 2.9, 64, 0, 74, 1280, 1500, 2, 2.0 * 1500, 0.2,
            Shape::kComputeBoundTransformer),
      Facts("wideresnet", 16, 16, 0, 646, 8192, 28 * 28, 4, 330, 0.1, Shape::kCnn),
  };
  return *facts;
}

// A CPU worker (PipelineCpuProfile: 4 cores) sustains about this many FLOP/s: 4 cores x 2 AVX-512
// FMA units x 16 fp32 lanes x 2 FLOP x 2.5 GHz = 640 GFLOP/s peak, at 25 % efficiency (estimate).
constexpr double kCpuWorkerFlops = 160e9;
// A stage replica's GPU footprint beyond its parameters: CUDA context and allocator slack.
constexpr double kRuntimeOverheadGiB = 1.0;
// Working activations held per request of a batch, in units of the stage's output activation.
constexpr int kActivationWorkingSet = 4;

const ModelFacts* FindFacts(std::string_view name) {
  const std::string canonical = PerfModel::CanonicalName(Sv(name));
  for (const ModelFacts& f : AllFacts()) {
    if (f.info.name == canonical) return &f;
  }
  return nullptr;
}

absl::Status UnknownModel(std::string_view name) {
  return absl::NotFoundError(absl::StrCat("unknown pipeline model '", Sv(name), "' (known: ",
                                          absl::StrJoin(PipelineModelNames(), ", "), ")"));
}

// The built-in model whose fitted curve gives `shape`.
const char* ShapeSource(Shape shape) {
  switch (shape) {
    case Shape::kComputeBoundTransformer:
      return "bert-base";
    case Shape::kShortTransformer:
      return "roberta-large";
    case Shape::kCnn:
      return "resnet152";
  }
  return "bert-base";
}

// The shape's fitted parameters scaled in time so that batch 1 at a whole GPU takes `exec`.
AnalyticParams StageParams(Shape shape, absl::Duration exec) {
  AnalyticParams base;
  for (const BuiltInModel& m : BuiltInModels()) {
    if (m.info.name == ShapeSource(shape)) base = m.params;
  }
  const double reference_s = AnalyticLatencyModel(base).LatencySeconds(1, 1.0, 1.0);
  return ScaledInTime(base, absl::ToDoubleSeconds(exec) / reference_s);
}

std::string Divisors(int layers) {
  std::vector<int> d;
  for (int i = 1; i <= layers; ++i) {
    if (layers % i == 0) d.push_back(i);
  }
  return absl::StrJoin(d, ", ");
}

}  // namespace

std::vector<std::string> PipelineModelNames() {
  std::vector<std::string> names;
  for (const ModelFacts& f : AllFacts()) names.push_back(f.info.name);
  return names;
}

absl::StatusOr<PipelineModelInfo> FindPipelineModel(std::string_view name) {
  const ModelFacts* f = FindFacts(name);
  if (f == nullptr) return UnknownModel(name);
  return f->info;
}

std::string StageModelName(std::string_view model, int index, int count) {
  return absl::StrCat(PerfModel::CanonicalName(Sv(model)), "/s", index, "of", count);
}

absl::StatusOr<StageModelRef> ParseStageModelName(std::string_view name) {
  const size_t slash = name.rfind("/s");
  const size_t of = name.rfind("of");
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("'", Sv(name), "' is not a stage model name (<model>/s<index>of<count>)"));
  };
  if (slash == std::string_view::npos || of == std::string_view::npos || of < slash) return bad();
  StageModelRef ref;
  ref.model = std::string(name.substr(0, slash));
  const std::string_view index = name.substr(slash + 2, of - slash - 2);
  const std::string_view count = name.substr(of + 2);
  auto parse = [](std::string_view s, int& out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc() && end == s.data() + s.size();
  };
  if (!parse(index, ref.index) || !parse(count, ref.count)) return bad();
  if (ref.count < 1 || ref.index < 0 || ref.index >= ref.count) return bad();
  return ref;
}

absl::StatusOr<std::vector<StageProfile>> SplitPipeline(std::string_view model, int stages,
                                                        std::string_view field) {
  const ModelFacts* f = FindFacts(model);
  if (f == nullptr) return UnknownModel(model);
  const int layers = f->info.layers;
  if (stages < 1 || layers % stages != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field '", Sv(field), "': ", stages, " stages do not divide ", f->info.name, "'s ", layers,
        " layers evenly (allowed: ", Divisors(layers), ")"));
  }
  const int64_t activation =
      static_cast<int64_t>(f->hidden) * f->positions * f->dtype_bytes;
  const common::Bytes params(f->info.param_bytes.count() / stages);
  const absl::Duration exec = f->info.standalone_exec / stages;
  const double flops = f->flops_per_param * static_cast<double>(params.count()) / f->dtype_bytes;
  std::vector<StageProfile> out;
  for (int i = 0; i < stages; ++i) {
    StageProfile s;
    s.index = i;
    s.count = stages;
    s.model_key = StageModelName(f->info.name, i, stages);
    s.param_bytes = params;
    s.activation_out = common::Bytes(i + 1 < stages ? activation : 0);
    s.gpu_memory = common::Bytes(params.count() +
                                 int64_t{kActivationWorkingSet} * f->info.max_batch * activation) +
                   common::Bytes::GiB(kRuntimeOverheadGiB);
    s.exec_batch1 = exec;
    s.service_cv = f->service_cv;
    s.cpu_slowdown = flops / kCpuWorkerFlops / absl::ToDoubleSeconds(exec);
    out.push_back(std::move(s));
  }
  return out;
}

absl::Status AddPipelineStages(PerfModel& perf, std::string_view model, int stages,
                               std::string_view field) {
  auto split = SplitPipeline(model, stages, field);
  if (!split.ok()) return split.status();
  const ModelFacts& f = *FindFacts(model);
  for (const StageProfile& s : *split) {
    ModelInfo info{s.model_key, FunctionKind::kInference, s.param_bytes, s.gpu_memory,
                   f.info.max_batch};
    auto latency = std::make_unique<AnalyticLatencyModel>(StageParams(f.shape, s.exec_batch1));
    if (absl::Status st = perf.Add(std::move(info), std::move(latency)); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace sluice::core
