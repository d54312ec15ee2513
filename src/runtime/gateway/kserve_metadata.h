// KServe v2 metadata answers of the gateway (docs/platform.md "Gateway"): server metadata for
// `GET /v2` and model metadata for `GET /v2/models/{name}[/versions/{v}]`, built from the route
// table the gateway already holds (no call to the controller or an instance). Used by
// GatewayCore (gateway_metadata.cc). Thread-safe: pure functions.
#ifndef SLUICE_RUNTIME_GATEWAY_KSERVE_METADATA_H_
#define SLUICE_RUNTIME_GATEWAY_KSERVE_METADATA_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

#include "runtime/gateway/route_table.h"

namespace sluice::runtime {

// The server's name and version as `GET /v2` reports them (the version is `sluice version`'s).
inline constexpr char kServerName[] = "sluice";
inline constexpr char kServerVersion[] = "0.1.0";
// A function has one served version: the controller replaces instances in place on redeploy.
inline constexpr char kModelVersion[] = "1";

// {"name": "sluice", "version": "0.1.0", "extensions": [...]}: the extensions are the
// gateway's additions to the core protocol ("sluice_timeout" for the Sluice-Timeout-Ms header,
// "sluice_pipelines", "openai" for the /v1 API of LLM functions).
nlohmann::json ServerMetadata();

// {"name", "versions": ["1"], "platform": "sluice_<kind>", "inputs": [], "outputs": []}, plus
// "state" (the route's), and for a stage of a pipeline "pipeline" and "stage". Function specs
// declare no tensors, so inputs and outputs are empty lists (the spec allows that: the server
// knows no metadata for them).
nlohmann::json ModelMetadata(const Route& route);

// A pipeline's own name (`/v2/models/{pipeline}`): platform "sluice_pipeline" and its stage
// functions in order.
nlohmann::json PipelineMetadata(const std::string& name, const std::vector<std::string>& stages);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_GATEWAY_KSERVE_METADATA_H_
