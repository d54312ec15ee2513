// LoadMerger (load_merge.h).
#include "runtime/controller/load_merge.h"

#include <algorithm>
#include <vector>

namespace sluice::runtime {

using nlohmann::json;

namespace {

double Num(const json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<double>() : 0.0;
}

// Adds `e` (another gateway's entry for the same function) into `sum`.
void Accumulate(json& sum, const json& e) {
  const double answered = Num(sum, "answered") + Num(e, "answered");
  if (answered > 0) {
    sum["latency_ms"] = (Num(sum, "latency_ms") * Num(sum, "answered") +
                         Num(e, "latency_ms") * Num(e, "answered")) / answered;
  }
  sum["rps"] = Num(sum, "rps") + Num(e, "rps");
  for (const char* key : {"queued", "in_flight", "arrivals", "answered"}) {  // counts
    if (sum.contains(key) || e.contains(key))
      sum[key] = static_cast<int64_t>(Num(sum, key) + Num(e, key));
  }
  if (e.contains("arrival_cv"))
    sum["arrival_cv"] = std::max(Num(sum, "arrival_cv"), Num(e, "arrival_cv"));
}

}  // namespace

int LoadMerger::Fresh(absl::Time now) const {
  int n = 0;
  for (const auto& [id, r] : reports_)
    n += now - r.at <= stale_ ? 1 : 0;
  return n;
}

std::optional<json> LoadMerger::Add(const std::string& gateway, const json& functions,
                                    absl::Time now) {
  reports_[gateway] = Report{functions, now};
  std::vector<const Report*> fresh;  // by gateway id; the first paces
  const std::string* pacer = nullptr;
  for (const auto& [id, r] : reports_) {
    if (now - r.at > stale_)
      continue;
    if (pacer == nullptr)
      pacer = &id;
    fresh.push_back(&r);
  }
  if (pacer == nullptr || *pacer != gateway)
    return std::nullopt;
  std::map<std::string, json> merged;  // by function name
  std::vector<std::string> order;
  for (const Report* r : fresh) {
    for (const json& e : r->functions) {
      const std::string name = e.value("name", "");
      auto [it, added] = merged.try_emplace(name, e);
      if (added)
        order.push_back(name);
      else
        Accumulate(it->second, e);
    }
  }
  json out = json::array();
  for (const std::string& name : order)
    out.push_back(std::move(merged[name]));
  return out;
}

}  // namespace sluice::runtime
