// sluice-example-echo: a no-op inference function - each response's outputs are the request's
// inputs. No GPU. Used by gateway benchmarks (overhead against a no-op) and tests. Spec: echo.yaml.
#include "runtime/sdk/function_server.h"

int main() {
  using sluice::runtime::InferRequest;
  using sluice::runtime::InferResult;
  std::string name = "echo";
  return sluice::runtime::RunFunction(
      "echo",
      [&](sluice::runtime::FunctionOptions& o) {
        name = o.name;
        o.handler_on_loop = true;  // a copy, never blocks: skip the worker thread hand-offs
        o.sample_request = {
            {"inputs", {{{"name", "x"}, {"shape", {1}}, {"datatype", "FP32"}, {"data", {1.0}}}}}};
      },
      [&]() -> absl::StatusOr<sluice::runtime::BatchHandler> {
        return sluice::runtime::BatchHandler([&name](std::span<const InferRequest> batch) {
          std::vector<InferResult> out;
          out.reserve(batch.size());
          for (const InferRequest& r : batch) {
            out.push_back(
                InferResult::Ok(sluice::runtime::InferResponse(name, r.id, r.body["inputs"])));
          }
          return out;
        });
      });
}
