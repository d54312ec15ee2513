// JSON in and out of the parameter store's agent API; errors map to HTTP as the rest of the
// agent API does (400 bad field, 404 unknown model, 409 exists/pinned, 507 no room).
#include "runtime/agent/agent_params.h"

#include <sys/stat.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "runtime/common/log.h"
#include "runtime/paramstore/checksum.h"
#include "runtime/paramstore/file_loader.h"

namespace sluice::runtime {
namespace {

using Json = nlohmann::json;

http::Response ErrorOf(const absl::Status& s) {
  int code = 500;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument: code = 400; break;
    case absl::StatusCode::kNotFound: code = 404; break;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition: code = 409; break;
    case absl::StatusCode::kResourceExhausted: code = 507; break;
    case absl::StatusCode::kUnavailable: code = 503; break;
    default: break;
  }
  return http::ErrorResponse(code, std::string(s.message()));
}

std::string TimeJson(absl::Time t) {
  return t == absl::InfinitePast() ? "" : absl::FormatTime(absl::RFC3339_full, t, absl::UTCTimeZone());
}

// The body as a JSON object with only `known` fields; InvalidArgument naming the field.
absl::StatusOr<Json> ParseBody(const std::string& body, std::initializer_list<const char*> known) {
  Json j = Json::parse(body.empty() ? "{}" : body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("body must be a JSON object");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) return absl::InvalidArgumentError("field '" + it.key() + "': unknown");
  }
  return j;
}

http::Response Load(ParamStore& store, const std::string& model, const std::string& body) {
  absl::StatusOr<Json> j = ParseBody(body, {"path", "threads", "layer_bytes"});
  if (!j.ok()) return ErrorOf(j.status());
  if (!j->contains("path") || !(*j)["path"].is_string()) {
    return http::ErrorResponse(400, "field 'path': required string");
  }
  LoadOptions o;
  if (j->contains("threads")) {
    if (!(*j)["threads"].is_number_integer()) {
      return http::ErrorResponse(400, "field 'threads': must be an integer");
    }
    o.threads = (*j)["threads"].get<int>();
  }
  if (j->contains("layer_bytes")) {
    const Json& l = (*j)["layer_bytes"];
    if (!l.is_array()) return http::ErrorResponse(400, "field 'layer_bytes': must be an array");
    for (const Json& v : l) {
      if (!v.is_number_integer()) {
        return http::ErrorResponse(400, "field 'layer_bytes': integers only");
      }
      o.layer_bytes.push_back(v.get<int64_t>());
    }
  }
  absl::StatusOr<LoadResult> r = LoadFile(store, model, (*j)["path"].get<std::string>(), o);
  if (!r.ok()) return ErrorOf(r.status());
  return http::JsonResponse(201, Json{{"model", model},
                                      {"bytes", r->bytes},
                                      {"seconds", absl::ToDoubleSeconds(r->elapsed)},
                                      {"gib_per_s", r->gib_per_s()}}
                                     .dump());
}

http::Response Forward(ParamStore& store, const std::string& model, const std::string& body,
                       const std::string& token) {
  absl::StatusOr<Json> j = ParseBody(body, {"chain", "chunk_bytes"});
  if (!j.ok()) return ErrorOf(j.status());
  if (!j->contains("chain") || !(*j)["chain"].is_array()) {
    return http::ErrorResponse(400, "field 'chain': required array of host:port");
  }
  std::vector<std::string> chain;
  for (const Json& v : (*j)["chain"]) {
    if (!v.is_string()) return http::ErrorResponse(400, "field 'chain': strings only");
    chain.push_back(v.get<std::string>());
  }
  ChainOptions o;
  o.token = token;
  if (j->contains("chunk_bytes")) {
    if (!(*j)["chunk_bytes"].is_number_integer()) {
      return http::ErrorResponse(400, "field 'chunk_bytes': must be an integer");
    }
    o.chunk_bytes = (*j)["chunk_bytes"].get<int64_t>();
  }
  absl::StatusOr<std::unique_ptr<ParamLease>> lease = store.Acquire(model);
  if (!lease.ok()) return ErrorOf(lease.status());
  absl::StatusOr<ChainReport> r = SendChain(**lease, chain, o);
  if (!r.ok()) return ErrorOf(r.status());
  return http::JsonResponse(r->failed.empty() ? 200 : 207,
                            Json{{"model", model},
                                 {"completed", r->completed},
                                 {"failed", r->failed},
                                 {"seconds", absl::ToDoubleSeconds(r->elapsed)}}
                                .dump());
}

}  // namespace

absl::StatusOr<std::unique_ptr<AgentParams>> AgentParams::Start(const AgentParamsConfig& c) {
  std::unique_ptr<AgentParams> p(new AgentParams());
  p->config_ = c;
  if (p->config_.token.empty()) {
    if (const char* t = std::getenv("SLUICE_PARAMS_TOKEN"); t != nullptr) p->config_.token = t;
  }
  ParamStoreOptions so;
  so.capacity_bytes = c.capacity_bytes;
  so.evict_threshold = c.evict_threshold;
  SLUICE_ASSIGN_OR_RETURN(so.pretouch, ParsePretouch(c.pretouch, "params_pretouch"));
  so.huge_pages = c.huge_pages;
  SLUICE_ASSIGN_OR_RETURN(p->store_, ParamStore::Create(so));
  ChainReceiverOptions ro;
  ro.host = c.host;
  ro.port = c.port;
  ro.chain.token = p->config_.token;
  SLUICE_ASSIGN_OR_RETURN(p->receiver_, ChainReceiver::Start(*p->store_, ro));
  SLUICE_ASSIGN_OR_RETURN(p->fd_server_, ParamFdServer::Start(*p->store_, c.socket_path));
  return p;
}

AgentParams::~AgentParams() {
  workers_.JoinAll();
  if (fd_server_) fd_server_->Stop();
  if (receiver_) receiver_->Stop();
}

void AgentParams::Defer(http::Responder respond, std::function<http::Response()> work) {
  // std::function needs a copyable callable: the responder and work move into a shared cell.
  auto job = std::make_shared<std::pair<http::Responder, std::function<http::Response()>>>(
      std::move(respond), std::move(work));
  workers_.Start([job] { job->first(job->second()); });
}

void AgentParams::AddRoutes(http::Router& r) {
  r.Handle("GET", "/agent/v1/params",
           [this](http::Request&, http::Responder respond) { respond(List()); });
  r.Handle("PUT", "/agent/v1/params/{model}", [this](http::Request& req, http::Responder respond) {
    Defer(std::move(respond), [this, model = req.param("model"), body = req.body] {
      return Load(*store_, model, body);
    });
  });
  r.Handle("POST", "/agent/v1/params/{model}/forward",
           [this](http::Request& req, http::Responder respond) {
             Defer(std::move(respond), [this, model = req.param("model"), body = req.body] {
               return Forward(*store_, model, body, config_.token);
             });
           });
  r.Handle("DELETE", "/agent/v1/params/{model}",
           [this](http::Request& req, http::Responder respond) {
             respond(Delete(req.param("model")));
           });
}

http::Response AgentParams::List() const {
  Json models = Json::array();
  for (const ParamModelInfo& m : store_->List()) {
    models.push_back({{"model", m.model},
                      {"bytes", m.bytes},
                      {"pinned", m.pins > 0},
                      {"pins", m.pins},
                      {"ready", m.ready},
                      {"loaded_at", TimeJson(m.loaded_at)},
                      {"last_use", TimeJson(m.last_use)},
                      {"layer_bytes", m.layer_bytes}});
  }
  return http::JsonResponse(200, Json{{"capacity_bytes", store_->capacity_bytes()},
                                      {"limit_bytes", store_->limit_bytes()},
                                      {"used_bytes", store_->used_bytes()},
                                      {"receive_address", receiver_->address()},
                                      {"chunk_bytes", store_->arena().chunk_bytes()},
                                      {"huge_pages", store_->arena().huge_pages()},
                                      {"warm_chunks", store_->arena().touched_chunks()},
                                      {"authenticated", !config_.token.empty()},
                                      {"socket", config_.socket_path},
                                      {"models", models}}
                                     .dump());
}

http::Response AgentParams::Delete(const std::string& model) {
  if (absl::Status s = store_->Evict(model); !s.ok()) return ErrorOf(s);
  return http::JsonResponse(200, Json{{"model", model}, {"evicted", true}}.dump());
}

std::string AgentParams::FileModelName(const std::string& path) {
  struct stat st {};
  if (path.empty() || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  const std::string key = absl::StrCat(path, "|", st.st_size, "|", st.st_mtim.tv_sec, ".",
                                       st.st_mtim.tv_nsec);
  return absl::StrCat("file-", absl::Hex(Checksum64(key.data(), key.size()), absl::kZeroPad16));
}

void AgentParams::CacheInBackground(const std::string& model, const std::string& path) {
  {
    absl::MutexLock lock(&caching_mu_);
    if (store_->Has(model) || !caching_.insert(model).second) return;
  }
  workers_.Start([this, model, path] {
    absl::StatusOr<LoadResult> r = LoadFile(*store_, model, path, LoadOptions{});
    if (!r.ok() && !absl::IsAlreadyExists(r.status())) {
      LogWarning("agent", "caching ", path, " in the parameter store: ", r.status().message());
    }
    absl::MutexLock lock(&caching_mu_);
    caching_.erase(model);
  });
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> AgentParams::InstanceEnv(
    const AgentParams* params, const std::string& model) {
  if (params == nullptr) {
    return absl::InvalidArgumentError("field 'params': this agent has no parameter store");
  }
  if (!params->store_->Has(model)) {
    return absl::InvalidArgumentError("field 'params': no model '" + model +
                                      "' in this node's parameter store");
  }
  return std::vector<std::pair<std::string, std::string>>{
      {"SLUICE_PARAMS_SOCKET", params->config_.socket_path}, {"SLUICE_PARAMS_MODEL", model}};
}

}  // namespace sluice::runtime
