// The metadata documents are plain JSON values; the handlers in gateway_metadata.cc pick the
// route and answer 404 for unknown names and versions.
#include "runtime/gateway/kserve_metadata.h"

#include "absl/strings/str_cat.h"

namespace sluice::runtime {

nlohmann::json ServerMetadata() {
  return {{"name", kServerName},
          {"version", kServerVersion},
          {"extensions", {"sluice_timeout", "sluice_pipelines", "openai"}}};
}

nlohmann::json ModelMetadata(const Route& route) {
  nlohmann::json m = {{"name", route.name},
                      {"versions", {kModelVersion}},
                      {"platform", absl::StrCat("sluice_", route.kind.empty() ? "inference"
                                                                                : route.kind)},
                      {"inputs", nlohmann::json::array()},
                      {"outputs", nlohmann::json::array()},
                      {"state", route.state}};
  if (!route.pipeline.empty()) {
    m["pipeline"] = route.pipeline;
    m["stage"] = route.stage;
  }
  return m;
}

nlohmann::json PipelineMetadata(const std::string& name, const std::vector<std::string>& stages) {
  return {{"name", name},
          {"versions", {kModelVersion}},
          {"platform", "sluice_pipeline"},
          {"inputs", nlohmann::json::array()},
          {"outputs", nlohmann::json::array()},
          {"stages", stages}};
}

}  // namespace sluice::runtime
