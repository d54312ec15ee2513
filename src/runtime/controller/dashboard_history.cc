// DashboardHistory: the sample and event rings behind /dashboard, and the diff that turns two
// consecutive samples into scaling events.
#include "runtime/controller/dashboard_history.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice::runtime {

using nlohmann::json;

namespace {

template <typename T, typename Key>
std::map<Key, const T*> Index(const std::vector<T>& v, Key T::*key) {
  std::map<Key, const T*> m;
  for (const T& x : v)
    m[x.*key] = &x;
  return m;
}

std::string Quota(const DashInstance& i) {
  return absl::StrFormat("<%.2f, %.2f, q %.2f>", i.request, i.limit, i.time_quota);
}

DashEvent Event(absl::Time at, std::string kind, std::string function, int64_t instance,
                std::string detail) {
  DashEvent e;
  e.at = at;
  e.kind = std::move(kind);
  e.function = std::move(function);
  e.instance = instance;
  e.detail = std::move(detail);
  return e;
}

void DiffFunction(const DashFunction* p, const DashFunction& n, absl::Time at,
                  std::vector<DashEvent>& out) {
  if (p == nullptr) {
    out.push_back(Event(at, "deployed", n.name, 0, absl::StrCat("state ", n.state)));
    return;
  }
  if (n.desired != p->desired) {
    out.push_back(Event(at, n.desired > p->desired ? "scale_out" : "scale_in", n.name, 0,
                        absl::StrFormat("desired %d -> %d (%.1f req/s, p95 %.0f ms, %d queued)",
                                        p->desired, n.desired, n.rps, n.p95_ms, n.queued)));
  }
  if (n.cold_starts > p->cold_starts) {
    out.push_back(Event(at, "cold_start", n.name, 0,
                        absl::StrCat("cold start #", n.cold_starts, " (", n.ready,
                                     " ready instances before it was up)")));
  }
  if (n.no_room && !p->no_room) {
    out.push_back(Event(at, "unschedulable", n.name, 0,
                        absl::StrFormat("no GPU has room for another instance (desired %d, "
                                        "%d ready, %d starting)",
                                        n.desired, n.ready, n.starting)));
  } else if (n.state != p->state && (n.state == "unschedulable" || n.state == "failed")) {
    out.push_back(Event(at, n.state == "failed" ? "failure" : "unschedulable", n.name, 0,
                        absl::StrCat("state ", p->state, " -> ", n.state)));
  }
}

void DiffInstance(const DashInstance* p, const DashInstance& n, absl::Time at,
                  std::vector<DashEvent>& out) {
  if (p == nullptr) {
    out.push_back(Event(at, "placement", n.function, n.id,
                        absl::StrCat("instance ", n.id, " placed on ", n.node, " ", n.gpu,
                                     " at ", Quota(n))));
    return;
  }
  if (n.state != p->state) {
    std::string kind = n.state == "failed" ? "failure" : n.state == "draining" ? "draining" : "";
    if (!kind.empty()) {
      out.push_back(Event(at, std::move(kind), n.function, n.id,
                          absl::StrCat("instance ", n.id, ": ", p->state, " -> ", n.state)));
    }
  }
  if (n.restarts > p->restarts) {
    out.push_back(Event(at, "restart", n.function, n.id,
                        absl::StrCat("instance ", n.id, " restarted (", n.restarts, " so far)")));
  }
  if (n.request != p->request || n.limit != p->limit || n.time_quota != p->time_quota) {
    out.push_back(Event(at, "vertical", n.function, n.id,
                        absl::StrCat("instance ", n.id, " quota ", Quota(*p), " -> ", Quota(n))));
  }
}

json CompactSample(const DashSample& s) {
  json fs = json::object(), is = json::object(), gs = json::object();
  for (const DashFunction& f : s.functions) {
    fs[f.name] = {{"rps", f.rps},         {"p50_ms", f.p50_ms},   {"p95_ms", f.p95_ms},
                  {"p99_ms", f.p99_ms},   {"svr", f.svr()},       {"ready", f.ready},
                  {"starting", f.starting}, {"desired", f.desired}, {"cold_starts", f.cold_starts},
                  {"queued", f.queued}};
  }
  for (const DashInstance& i : s.instances) {
    is[std::to_string(i.id)] = {
        {"function", i.function}, {"gpu", i.gpu}, {"sm_share", i.sm_share}, {"state", i.state}};
  }
  for (const DashGpu& g : s.gpus)
    gs[g.uuid] = g.share_state;
  return {{"t", DashMs(s.at)}, {"functions", fs}, {"instances", is}, {"gpus", gs}};
}

json EventJson(const DashEvent& e) {
  return {{"seq", e.seq},           {"t", DashMs(e.at)},       {"kind", e.kind},
          {"function", e.function}, {"instance", e.instance}, {"detail", e.detail}};
}

}  // namespace

int64_t DashMs(absl::Time t) { return absl::ToInt64Milliseconds(t - absl::UnixEpoch()); }

std::vector<DashEvent> DiffSamples(const DashSample& prev, const DashSample& next) {
  std::vector<DashEvent> out;
  const auto pf = Index(prev.functions, &DashFunction::name);
  const auto nf = Index(next.functions, &DashFunction::name);
  for (const DashFunction& f : next.functions) {
    auto it = pf.find(f.name);
    DiffFunction(it == pf.end() ? nullptr : it->second, f, next.at, out);
  }
  for (const auto& [name, f] : pf) {
    if (!nf.contains(name))
      out.push_back(Event(next.at, "deleted", name, 0, "removed from the registry"));
  }
  const auto pi = Index(prev.instances, &DashInstance::id);
  const auto ni = Index(next.instances, &DashInstance::id);
  for (const DashInstance& i : next.instances) {
    auto it = pi.find(i.id);
    DiffInstance(it == pi.end() ? nullptr : it->second, i, next.at, out);
  }
  for (const auto& [id, i] : pi) {
    if (!ni.contains(id)) {
      out.push_back(Event(next.at, "stopped", i->function, id,
                          absl::StrCat("instance ", id, " left ", i->node, " ", i->gpu)));
    }
  }
  const auto pg = Index(prev.gpus, &DashGpu::uuid);
  for (const DashGpu& g : next.gpus) {
    auto it = pg.find(g.uuid);
    if (it != pg.end() && it->second->share_state != g.share_state) {
      out.push_back(Event(next.at, "share_state", "", 0,
                          absl::StrCat(g.node, " ", g.uuid, ": token server ",
                                       it->second->share_state, " -> ", g.share_state)));
    }
  }
  return out;
}

DashboardHistory::DashboardHistory(size_t max_samples, size_t max_events)
    : max_samples_(std::max<size_t>(max_samples, 1)),
      max_events_(std::max<size_t>(max_events, 1)) {}

void DashboardHistory::Add(DashSample sample) {
  if (!samples_.empty()) {
    if (sample.at < samples_.back().at)
      return;
    for (DashEvent& e : DiffSamples(samples_.back(), sample))
      AddEvent(std::move(e));
  }
  samples_.push_back(std::move(sample));
  while (samples_.size() > max_samples_)
    samples_.pop_front();
}

void DashboardHistory::AddEvent(DashEvent event) {
  event.seq = next_seq_++;
  events_.push_back(std::move(event));
  while (events_.size() > max_events_)
    events_.pop_front();
}

json DashboardHistory::StateJson(absl::Time now, absl::Time since) const {
  json samples = json::array(), events = json::array();
  for (const DashSample& s : samples_) {
    if (s.at > since)
      samples.push_back(CompactSample(s));
  }
  for (const DashEvent& e : events_) {
    if (e.at > since)
      events.push_back(EventJson(e));
  }
  return {{"now_ms", DashMs(now)},
          {"since_ms", DashMs(since)},
          {"samples", std::move(samples)},
          {"events", std::move(events)},
          {"latest", samples_.empty() ? json(nullptr) : DashSampleJson(samples_.back())}};
}

json DashSampleJson(const DashSample& s) {
  json gpus = json::array(), instances = json::array(), functions = json::array();
  for (const DashGpu& g : s.gpus) {
    gpus.push_back({{"node", g.node}, {"uuid", g.uuid}, {"index", g.index}, {"name", g.name},
                    {"share_state", g.share_state}});
  }
  for (const DashInstance& i : s.instances) {
    instances.push_back({{"id", i.id},           {"function", i.function},
                         {"node", i.node},       {"gpu", i.gpu},
                         {"state", i.state},     {"sm_share", i.sm_share},
                         {"request", i.request}, {"limit", i.limit},
                         {"time_quota", i.time_quota}, {"restarts", i.restarts},
                         {"in_flight", i.in_flight}});
  }
  for (const DashFunction& f : s.functions) {
    functions.push_back({{"name", f.name},         {"kind", f.kind},
                         {"state", f.state},       {"policy", f.policy},
                         {"slo_ms", f.slo_ms > 0 ? json(f.slo_ms) : json(nullptr)},
                         {"desired", f.desired},   {"ready", f.ready},
                         {"starting", f.starting}, {"cold_starts", f.cold_starts},
                         {"no_room", f.no_room},   {"rps", f.rps},           {"queued", f.queued},
                         {"answered", f.answered}, {"violations", f.violations},
                         {"svr", f.svr()},         {"p50_ms", f.p50_ms},
                         {"p95_ms", f.p95_ms},     {"p99_ms", f.p99_ms}});
  }
  return {{"t", DashMs(s.at)}, {"gpus", gpus}, {"instances", instances}, {"functions", functions}};
}

}  // namespace sluice::runtime
