// The gateway's Prometheus families (docs/platform.md, "Metrics") and per-function series looked
// up once and cached, so the request path touches only lock-free cells. Used by GatewayDaemon.
// Thread safety: the Registry renders from any thread; ForFunction/ForInstance on the loop only.
#ifndef SLUICE_RUNTIME_GATEWAY_GATEWAY_METRICS_H_
#define SLUICE_RUNTIME_GATEWAY_GATEWAY_METRICS_H_

#include <map>
#include <memory>
#include <string>

#include "runtime/metrics/registry.h"

namespace sluice::runtime {

// Cached series of one function.
struct FunctionMetrics {
  Histogram* duration = nullptr;        // end to end, seconds
  Histogram* queue_duration = nullptr;  // arrival -> batch sent, seconds
  Gauge* queue_length = nullptr;
  Histogram* batch_size = nullptr;
  Counter* cold_starts = nullptr;
  Gauge* instances_ready = nullptr;
  Gauge* instances_starting = nullptr;
  Histogram* ttft = nullptr;  // LLM: arrival -> first token, seconds
  Histogram* tpot = nullptr;  // LLM: (last token - first token) / (tokens - 1), seconds
  std::map<int, Counter*> requests_by_code;  // filled on first use of a code
};

struct InstanceMetrics {
  Gauge* sm_share = nullptr;
  Gauge* sm_request = nullptr;
  Gauge* sm_limit = nullptr;
};

class GatewayMetrics {
 public:
  GatewayMetrics();
  FunctionMetrics& ForFunction(const std::string& function);
  InstanceMetrics ForInstance(const std::string& function, int64_t instance);
  // requests_total{function, code}.
  Counter& Requests(FunctionMetrics& m, const std::string& function, int code);
  std::string Render() const { return registry_.Render(); }

 private:
  Registry registry_;
  Family<Counter>* requests_;
  Family<Histogram>* duration_;
  Family<Histogram>* queue_duration_;
  Family<Gauge>* queue_length_;
  Family<Histogram>* batch_size_;
  Family<Gauge>* instances_;
  Family<Counter>* cold_starts_;
  Family<Histogram>* ttft_;
  Family<Histogram>* tpot_;
  Family<Gauge>* sm_share_;
  Family<Gauge>* sm_request_;
  Family<Gauge>* sm_limit_;
  std::map<std::string, std::unique_ptr<FunctionMetrics>> functions_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_GATEWAY_GATEWAY_METRICS_H_
