// Classifier: request rows are concatenated into one matrix so the whole batch is one launch
// per layer; buffers grow to the largest batch seen.
#include "classifier.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "kernels_ptx.h"

namespace sluice::examples {
namespace {

using nlohmann::json;
using runtime::InferResult;

constexpr unsigned kThreads = 128;
// Modelled compute per batch (100 us spin blocks; 108 SMs: 2 ms + 0.5 ms per row).
constexpr int64_t kBlocksBase = 2160;
constexpr int64_t kBlocksPerItem = 540;

// The emulated device's stand-in for sluice_dense: same guard, same fma order.
void DenseBody(void** p, SluiceEmuDim3 grid, SluiceEmuDim3 block, void*) {
  auto ptr = [p](int i) {
    return reinterpret_cast<float*>(*static_cast<uint64_t*>(p[i]));
  };
  const float* in = ptr(0);
  const float* w = ptr(1);
  const float* bias = ptr(2);
  float* out = ptr(3);
  const unsigned batch = *static_cast<unsigned*>(p[4]);
  const unsigned in_dim = *static_cast<unsigned*>(p[5]);
  const unsigned out_dim = *static_cast<unsigned*>(p[6]);
  const unsigned relu = *static_cast<unsigned*>(p[7]);
  const uint64_t threads = uint64_t{grid.x} * block.x;
  for (uint64_t idx = 0; idx < threads && idx < uint64_t{batch} * out_dim; ++idx) {
    const unsigned b = static_cast<unsigned>(idx / out_dim),
                   j = static_cast<unsigned>(idx % out_dim);
    float acc = bias[j];
    for (unsigned i = 0; i < in_dim; ++i) {
      acc = std::fma(in[b * in_dim + i], w[j * in_dim + i], acc);
    }
    if (relu != 0 && acc < 0.0f) {
      acc = 0.0f;
    }
    out[idx] = acc;
  }
}

std::vector<float> Uniform(uint64_t& state, size_t n, float scale) {
  std::vector<float> v(n);
  for (float& x : v) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const uint64_t r = state * 2685821657736338717ULL;
    x = scale * (static_cast<float>(r >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f);
  }
  return v;
}

// "scores" (softmax of each row of `logits`, [rows, classes]) and "class" (argmax, [rows]).
json Outputs(const float* logits, int64_t rows, int classes) {
  std::vector<float> scores;
  std::vector<int64_t> best;
  for (int64_t r = 0; r < rows; ++r) {
    const float* l = logits + r * classes;
    const float top = *std::max_element(l, l + classes);
    float sum = 0;
    for (int c = 0; c < classes; ++c) {
      sum += std::exp(l[c] - top);
    }
    for (int c = 0; c < classes; ++c) {
      scores.push_back(std::exp(l[c] - top) / sum);
    }
    best.push_back(std::max_element(l, l + classes) - l);
  }
  return {runtime::Fp32Output("scores", {rows, classes}, scores),
          runtime::Int64Output("class", {rows}, best)};
}

absl::StatusOr<std::vector<float>> Floats(const json& j, const char* field, size_t n) {
  if (!j.contains(field) || !j[field].is_array() || j[field].size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("model: ", field, ": must be ", n, " numbers"));
  }
  std::vector<float> v;
  for (const json& x : j[field]) {
    if (!x.is_number()) {
      return absl::InvalidArgumentError(absl::StrCat("model: ", field, ": must be numbers"));
    }
    v.push_back(x.get<float>());
  }
  return v;
}

}  // namespace

MlpWeights MlpWeights::FromSeed(uint64_t seed) {
  MlpWeights m;
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  m.w1 = Uniform(state, size_t(m.hidden) * m.in_dim, 1.0f / std::sqrt(float(m.in_dim)));
  m.b1 = Uniform(state, m.hidden, 0.1f);
  m.w2 = Uniform(state, size_t(m.classes) * m.hidden, 1.0f / std::sqrt(float(m.hidden)));
  m.b2 = Uniform(state, m.classes, 0.1f);
  return m;
}

absl::StatusOr<MlpWeights> MlpWeights::FromJson(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("model: not a JSON object");
  }
  MlpWeights m;
  for (auto [field, dim] :
       {std::pair{"in_dim", &m.in_dim}, {"hidden", &m.hidden}, {"classes", &m.classes}}) {
    if (!j.contains(field) || !j[field].is_number_integer() || j[field].get<int64_t>() < 1 ||
        j[field].get<int64_t>() > 4096) {
      return absl::InvalidArgumentError(
          absl::StrCat("model: ", field, ": must be an integer in [1, 4096]"));
    }
    *dim = j[field].get<int>();
  }
  SLUICE_ASSIGN_OR_RETURN(m.w1, Floats(j, "w1", size_t(m.hidden) * m.in_dim));
  SLUICE_ASSIGN_OR_RETURN(m.b1, Floats(j, "b1", m.hidden));
  SLUICE_ASSIGN_OR_RETURN(m.w2, Floats(j, "w2", size_t(m.classes) * m.hidden));
  SLUICE_ASSIGN_OR_RETURN(m.b2, Floats(j, "b2", m.classes));
  return m;
}

absl::StatusOr<MlpWeights> MlpWeights::Load(const std::string& model_path) {
  if (model_path.empty()) {
    return FromSeed(42);
  }
  if (absl::StartsWith(model_path, "seed:")) {
    uint64_t seed = 0;
    if (!absl::SimpleAtoi(model_path.substr(5), &seed)) {
      return absl::InvalidArgumentError("model path 'seed:N' needs an integer N");
    }
    return FromSeed(seed);
  }
  std::ifstream in(model_path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("model file ", model_path, " cannot be read"));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<MlpWeights> m = FromJson(text.str());
  if (!m.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(model_path, ": ", m.status().message()));
  }
  return m;
}

absl::StatusOr<std::unique_ptr<Classifier>> Classifier::Create(runtime::CudaGpu& gpu,
                                                               MlpWeights weights,
                                                               std::string model_name) {
  std::unique_ptr<Classifier> c(new Classifier(gpu, std::move(weights), std::move(model_name)));
  SLUICE_RETURN_IF_ERROR(
      gpu.RegisterEmulated({{"sluice_dense", {8, 8, 8, 8, 4, 4, 4, 4}, DenseBody}}));
  SLUICE_ASSIGN_OR_RETURN(std::vector<runtime::Kernel> k,
                          gpu.LoadModule(kKernelsPtx, {"sluice_dense"}));
  c->dense_ = k[0];
  SLUICE_RETURN_IF_ERROR(c->Upload());
  SLUICE_RETURN_IF_ERROR(c->EnsureCapacity(8));
  return c;
}

absl::Status Classifier::Upload() {
  for (auto [dst, src] : {std::pair{&w1_, &weights_.w1},
                          {&b1_, &weights_.b1},
                          {&w2_, &weights_.w2},
                          {&b2_, &weights_.b2}}) {
    SLUICE_ASSIGN_OR_RETURN(*dst, gpu_.Alloc(src->size() * sizeof(float)));
    SLUICE_RETURN_IF_ERROR(gpu_.CopyHtoD(*dst, src->data(), src->size() * sizeof(float)));
  }
  return absl::OkStatus();
}

absl::Status Classifier::EnsureCapacity(int64_t rows) {
  if (rows <= capacity_rows_) {
    return absl::OkStatus();
  }
  for (runtime::DevicePtr p : {x_, h_, logits_}) {
    if (p != 0) {
      SLUICE_RETURN_IF_ERROR(gpu_.Free(p));
    }
  }
  const size_t f = sizeof(float);
  SLUICE_ASSIGN_OR_RETURN(x_, gpu_.Alloc(size_t(rows) * weights_.in_dim * f));
  SLUICE_ASSIGN_OR_RETURN(h_, gpu_.Alloc(size_t(rows) * weights_.hidden * f));
  SLUICE_ASSIGN_OR_RETURN(logits_, gpu_.Alloc(size_t(rows) * weights_.classes * f));
  capacity_rows_ = rows;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> Classifier::Forward(const std::vector<float>& x, int64_t rows) {
  SLUICE_RETURN_IF_ERROR(EnsureCapacity(rows));
  SLUICE_RETURN_IF_ERROR(gpu_.CopyHtoD(x_, x.data(), x.size() * sizeof(float)));
  unsigned n = static_cast<unsigned>(rows), in = weights_.in_dim, hid = weights_.hidden,
           cls = weights_.classes, relu = 1, linear = 0;
  void* layer1[] = {&x_, &w1_, &b1_, &h_, &n, &in, &hid, &relu};
  void* layer2[] = {&h_, &w2_, &b2_, &logits_, &n, &hid, &cls, &linear};
  auto grid = [](unsigned threads) {
    return (threads + kThreads - 1) / kThreads;
  };
  SLUICE_RETURN_IF_ERROR(gpu_.Launch(dense_, grid(n * hid), kThreads, layer1));
  SLUICE_RETURN_IF_ERROR(gpu_.Launch(dense_, grid(n * cls), kThreads, layer2));
  SLUICE_RETURN_IF_ERROR(gpu_.Spin(runtime::ModelledBlocks(rows, kBlocksBase, kBlocksPerItem)));
  SLUICE_RETURN_IF_ERROR(gpu_.Synchronize());
  std::vector<float> logits(size_t(rows) * cls);
  SLUICE_RETURN_IF_ERROR(gpu_.CopyDtoH(logits.data(), logits_, logits.size() * sizeof(float)));
  return logits;
}

std::vector<InferResult> Classifier::Infer(std::span<const runtime::InferRequest> batch) {
  std::vector<InferResult> out(batch.size());
  std::vector<int64_t> first_row(batch.size(), -1), row_count(batch.size(), 0);
  std::vector<float> x;
  int64_t rows = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    absl::StatusOr<runtime::FloatTensor> t = runtime::InputAsFloats(batch[i], "x");
    if (!t.ok()) {
      t = runtime::InputAsFloats(batch[i], "");
    }
    const size_t dims = t.ok() ? t->shape.size() : 0;
    if (!t.ok() || dims < 1 || dims > 2 || t->shape.back() != weights_.in_dim) {
      out[i] =
          InferResult::Error(absl::StrCat("inputs: need an FP32 tensor of shape [", weights_.in_dim,
                                          "] or [rows, ", weights_.in_dim, "]"));
      continue;
    }
    first_row[i] = rows;
    row_count[i] = dims == 1 ? 1 : t->shape[0];
    rows += row_count[i];
    x.insert(x.end(), t->values.begin(), t->values.end());
  }
  if (rows == 0) {
    return out;
  }
  absl::StatusOr<std::vector<float>> logits = Forward(x, rows);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (first_row[i] < 0) {
      continue;
    }
    if (!logits.ok()) {
      out[i] = InferResult::Error(std::string(logits.status().message()), 500);
      continue;
    }
    out[i] = InferResult::Ok(runtime::InferResponse(
        name_, batch[i].id,
        Outputs(logits->data() + first_row[i] * weights_.classes, row_count[i], weights_.classes)));
  }
  return out;
}

json Classifier::SampleRequest() const {
  return {{"id", "sample"},
          {"inputs",
           {{{"name", "x"},
             {"shape", {1, weights_.in_dim}},
             {"datatype", "FP32"},
             {"data", std::vector<float>(weights_.in_dim, 1.0f)}}}}};
}

}  // namespace sluice::examples
