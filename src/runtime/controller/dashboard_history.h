// DashboardHistory: what the controller's /dashboard shows over the last minutes - a ring buffer
// of state samples (GPUs with their token server's state, instances with their SM share,
// functions with request rate, latency percentiles, SVR and cold starts) and a ring of
// timestamped events (scale out/in, placements, vertical share changes, failures, token server
// state changes) derived by diffing consecutive samples. Filled by ControllerCore (one sample a
// second, dashboard_sample.cc), read by the dashboard's HTTP handlers (dashboard_http.cc).
// Pure: time comes in with each sample. Not thread-safe: lives on the controller's loop.
#ifndef SLUICE_RUNTIME_CONTROLLER_DASHBOARD_HISTORY_H_
#define SLUICE_RUNTIME_CONTROLLER_DASHBOARD_HISTORY_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {

struct DashGpu {
  std::string node;
  std::string uuid;
  int index = 0;
  std::string name;
  // The GPU's token server state: NONE, EMERGENCY, RECOVERY or CONTENTION (Dilu's vertical
  // controller; "NONE" for stateless controllers and agents that do not report one).
  std::string share_state = "NONE";
};

struct DashInstance {
  int64_t id = 0;
  std::string function;
  std::string node;
  std::string gpu;    // first GPU's uuid
  std::string state;  // the agent's state, "draining" once the controller removes it
  double sm_share = 0;  // the token server's grant / GPU tokens per period
  double request = 0;
  double limit = 0;
  double time_quota = 1;
  int restarts = 0;
  int in_flight = 0;
};

// One function as the last gateway load report and the controller saw it.
struct DashFunction {
  std::string name;
  std::string kind;
  std::string state;  // the registry state, or "unschedulable"
  std::string policy;
  double slo_ms = 0;  // 0: none
  int desired = 0;
  int ready = 0;
  int starting = 0;
  int64_t cold_starts = 0;  // since deploy (the registry's counter)
  bool no_room = false;     // the last placement for it found no GPU with room
  // From the gateway's last load report (zero when none came in the last few seconds): the
  // window's arrival rate, queue, answered requests, their sojourn percentiles and how many
  // missed the SLO (or failed).
  double rps = 0;
  int64_t queued = 0;
  int64_t answered = 0;
  int64_t violations = 0;
  double p50_ms = 0;
  double p95_ms = 0;
  double p99_ms = 0;
  double svr() const {
    return answered > 0 ? static_cast<double>(violations) / static_cast<double>(answered) : 0;
  }
};

struct DashSample {
  absl::Time at;
  std::vector<DashGpu> gpus;
  std::vector<DashInstance> instances;  // by id
  std::vector<DashFunction> functions;  // by name
};

struct DashEvent {
  int64_t seq = 0;  // 1, 2, ... in the order recorded
  absl::Time at;
  // scale_out | scale_in | placement | stopped | vertical | failure | restart | cold_start |
  // unschedulable | share_state | deployed | deleted
  std::string kind;
  std::string function;  // "" for GPU-wide events
  int64_t instance = 0;  // 0 when not about one instance
  std::string detail;    // human-readable, e.g. "desired 1 -> 2 (rps 41.0, p95 63 ms)"
};

// The events that explain the step from `prev` to `next`, in a stable order (functions, then
// instances, then GPUs); seq is left 0. Pure.
std::vector<DashEvent> DiffSamples(const DashSample& prev, const DashSample& next);

class DashboardHistory {
 public:
  // Keeps the newest `max_samples` samples and `max_events` events (both >= 1).
  DashboardHistory(size_t max_samples, size_t max_events);

  // Appends a sample (its `at` must not precede the last one's; an older one is dropped) and
  // the events DiffSamples finds against the previous sample.
  void Add(DashSample sample);
  // Records an event the diff cannot see (e.g. a placement that failed); seq and `at` are kept
  // as given except seq, which is assigned.
  void AddEvent(DashEvent event);

  // GET /dashboard/api/state?since=MS: {"now_ms", "since_ms", "samples": [samples with at >
  // since], "events": [events with at > since, oldest first], "latest": the newest sample in
  // full (gpus, instances, functions) or null}. Sample entries are compact: {"t": ms,
  // "functions": {name: {rps, p50_ms, p95_ms, p99_ms, svr, ready, starting, desired,
  // cold_starts, queued}}, "instances": {id: {function, gpu, sm_share, state}}, "gpus":
  // {uuid: share_state}}.
  nlohmann::json StateJson(absl::Time now, absl::Time since) const;

  size_t sample_count() const { return samples_.size(); }
  size_t event_count() const { return events_.size(); }
  const std::deque<DashSample>& samples() const { return samples_; }
  const std::deque<DashEvent>& events() const { return events_; }

 private:
  size_t max_samples_;
  size_t max_events_;
  int64_t next_seq_ = 1;
  std::deque<DashSample> samples_;
  std::deque<DashEvent> events_;
};

// JSON of one sample in full (the "latest" member above).
nlohmann::json DashSampleJson(const DashSample& s);
// Milliseconds since the Unix epoch.
int64_t DashMs(absl::Time t);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_DASHBOARD_HISTORY_H_
