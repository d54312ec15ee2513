// Family names and label sets are constants, so registry errors here are programming errors.
#include "runtime/gateway/gateway_metrics.h"

#include "common/status.h"

namespace sluice::runtime {
namespace {

template <typename T>
T* Must(absl::StatusOr<T*> v) {
  SLUICE_CHECK_MSG(v.ok(), v.status().ToString());
  return *v;
}

}  // namespace

GatewayMetrics::GatewayMetrics() {
  const std::vector<double> batch_bounds = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  requests_ = Must(registry_.AddCounter("sluice_gateway_requests_total",
                                        "Inference requests answered, by HTTP status code",
                                        {"function", "code"}));
  duration_ = Must(registry_.AddHistogram("sluice_gateway_request_duration_seconds",
                                          "End-to-end request latency at the gateway", {"function"},
                                          DefaultLatencyBucketsSeconds()));
  queue_duration_ =
      Must(registry_.AddHistogram("sluice_gateway_queue_duration_seconds",
                                  "Time from arrival until the request's batch was sent",
                                  {"function"}, DefaultLatencyBucketsSeconds()));
  queue_length_ = Must(registry_.AddGauge(
      "sluice_gateway_queue_length", "Requests waiting in the function's queue", {"function"}));
  batch_size_ = Must(registry_.AddHistogram("sluice_gateway_batch_size",
                                            "Requests per batch sent to an instance", {"function"},
                                            batch_bounds));
  instances_ = Must(registry_.AddGauge(
      "sluice_gateway_instances", "Instances in the route table by state", {"function", "state"}));
  cold_starts_ = Must(registry_.AddCounter("sluice_gateway_cold_starts_total",
                                           "Requests that found no ready instance", {"function"}));
  ttft_ = Must(registry_.AddHistogram("sluice_gateway_ttft_seconds",
                                      "LLM functions: time from arrival to the first token",
                                      {"function"}, DefaultLatencyBucketsSeconds()));
  tpot_ = Must(registry_.AddHistogram("sluice_gateway_tpot_seconds",
                                      "LLM functions: mean time per output token after the first",
                                      {"function"}, DefaultLatencyBucketsSeconds()));
  // `instance_id`, not `instance`: Prometheus attaches its own `instance` (the scrape target).
  sm_share_ = Must(registry_.AddGauge("sluice_instance_sm_share",
                                      "SM share the instance received last period (0..1)",
                                      {"function", "instance_id"}));
  sm_request_ =
      Must(registry_.AddGauge("sluice_instance_sm_request",
                              "SM request quota of the instance (0..1)", {"function", "instance_id"}));
  sm_limit_ =
      Must(registry_.AddGauge("sluice_instance_sm_limit", "SM limit quota of the instance (0..1)",
                              {"function", "instance_id"}));
}

FunctionMetrics& GatewayMetrics::ForFunction(const std::string& function) {
  std::unique_ptr<FunctionMetrics>& slot = functions_[function];
  if (slot != nullptr)
    return *slot;
  slot = std::make_unique<FunctionMetrics>();
  slot->duration = Must(duration_->WithLabels({function}));
  slot->queue_duration = Must(queue_duration_->WithLabels({function}));
  slot->queue_length = Must(queue_length_->WithLabels({function}));
  slot->batch_size = Must(batch_size_->WithLabels({function}));
  slot->cold_starts = Must(cold_starts_->WithLabels({function}));
  slot->instances_ready = Must(instances_->WithLabels({function, "ready"}));
  slot->instances_starting = Must(instances_->WithLabels({function, "starting"}));
  slot->ttft = Must(ttft_->WithLabels({function}));
  slot->tpot = Must(tpot_->WithLabels({function}));
  return *slot;
}

InstanceMetrics GatewayMetrics::ForInstance(const std::string& function, int64_t instance) {
  const std::string id = std::to_string(instance);
  return InstanceMetrics{Must(sm_share_->WithLabels({function, id})),
                         Must(sm_request_->WithLabels({function, id})),
                         Must(sm_limit_->WithLabels({function, id}))};
}

Counter& GatewayMetrics::Requests(FunctionMetrics& m, const std::string& function, int code) {
  Counter*& c = m.requests_by_code[code];
  if (c == nullptr)
    c = Must(requests_->WithLabels({function, std::to_string(code)}));
  return *c;
}

}  // namespace sluice::runtime
