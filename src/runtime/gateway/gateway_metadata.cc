// GatewayCore's KServe v2 metadata and readiness handlers: answered from the route table on the
// loop (no controller call), so they are as current as the last routes poll.
#include "absl/strings/str_cat.h"

#include "runtime/gateway/gateway_core.h"
#include "runtime/gateway/kserve_metadata.h"

namespace sluice::runtime::internal {
namespace {

// 404 naming the version when the request names one other than kModelVersion.
bool UnknownVersion(const http::Request& req, const std::string& name,
                    http::Responder& respond) {
  const std::string version = req.param("version");
  if (version.empty() || version == kModelVersion)
    return false;
  respond(http::ErrorResponse(404, absl::StrCat("model '", name, "' has no version '", version,
                                                "' (versions: ", kModelVersion, ")")));
  return true;
}

}  // namespace

void GatewayCore::HandleServerMetadata(http::Request&, http::Responder respond) {
  respond(http::JsonResponse(200, ServerMetadata().dump()));
}

void GatewayCore::HandleModelMetadata(http::Request& req, http::Responder respond) {
  const std::string name = req.param("name");
  if (UnknownVersion(req, name, respond))
    return;
  if (auto it = functions_.find(name); it != functions_.end())
    return respond(http::JsonResponse(200, ModelMetadata(it->second->route).dump()));
  if (auto p = pipelines_.find(name); p != pipelines_.end())
    return respond(http::JsonResponse(200, PipelineMetadata(name, p->second).dump()));
  respond(http::ErrorResponse(404, absl::StrCat("unknown model '", name, "'")));
}

void GatewayCore::HandleModelReady(http::Request& req, http::Responder respond) {
  const std::string name = req.param("name");
  if (UnknownVersion(req, name, respond))
    return;
  std::vector<std::string> needed = {name};
  if (auto p = pipelines_.find(name); p != pipelines_.end() && !functions_.contains(name))
    needed = p->second;  // a pipeline is ready when every stage is
  else if (!functions_.contains(name))
    return respond(http::ErrorResponse(404, absl::StrCat("unknown function '", name, "'")));
  for (const std::string& f : needed) {
    auto it = functions_.find(f);
    if (it == functions_.end() || it->second->dispatcher.ready_count() == 0) {
      return respond(http::ErrorResponse(
          503, absl::StrCat("function '", f.empty() ? name : f, "' has no ready instance")));
    }
  }
  respond(http::JsonResponse(200, nlohmann::json{{"name", name}, {"ready", true}}.dump()));
}

}  // namespace sluice::runtime::internal
