// Routing, generate, role and stats of the LLM instance API; prefill/KV/decode are in llm_pd.cc.
#include "llm_server.h"

#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace sluice::examples {

using Json = nlohmann::json;

absl::StatusOr<LlmRole> ParseLlmRole(const std::string& role) {
  if (role == "colocated")
    return LlmRole::kColocated;
  if (role == "prefill")
    return LlmRole::kPrefill;
  if (role == "decode")
    return LlmRole::kDecode;
  return absl::InvalidArgumentError(
      absl::StrCat("role: unknown role '", role, "' (allowed: prefill, decode, colocated)"));
}

const char* LlmRoleName(LlmRole role) {
  switch (role) {
    case LlmRole::kPrefill:
      return "prefill";
    case LlmRole::kDecode:
      return "decode";
    case LlmRole::kColocated:
      break;
  }
  return "colocated";
}

absl::StatusOr<std::unique_ptr<LlmServer>> LlmServer::Start(http::EventLoop& loop,
                                                            LlmServerOptions options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<core::LlmPerfModel> model,
                          core::BuiltinLlmModel(options.model, options.gpu, options.tp));
  if (!(options.kv_scale > 0) || !(options.time_scale > 0))
    return absl::InvalidArgumentError("kv_scale and time_scale must be > 0");
  std::unique_ptr<LlmServer> s(new LlmServer(loop, options, std::move(model)));
  http::Router router;
  s->Route(router);
  SLUICE_ASSIGN_OR_RETURN(
      s->server_, http::Server::Start(loop, {options.host, options.port}, std::move(router)));
  return s;
}

LlmServer::LlmServer(http::EventLoop& loop, LlmServerOptions options,
                     std::unique_ptr<core::LlmPerfModel> model)
    : loop_(loop), options_(std::move(options)),
      engine_(loop, std::move(model), EngineOptions{options_.time_scale}),
      client_(std::make_unique<http::Client>(loop)) {}

LlmServer::~LlmServer() {
  server_->Stop();
  // The engine's timers and the client's callbacks run on the loop: tear them down there.
  std::promise<void> done;
  loop_.Post([this, &done] {
    engine_.Abort();  // no iteration may fire into a half-destroyed server
    client_.reset();
    done.set_value();
  });
  done.get_future().wait();
}

int LlmServer::port() const {
  return server_->port();
}

int64_t LlmServer::KvBytes(int tokens) const {
  return static_cast<int64_t>(static_cast<double>(tokens) *
                              engine_.model().spec().kv_bytes_per_token.count() *
                              options_.kv_scale);
}

void LlmServer::Route(http::Router& router) {
  auto ok = [](http::Request&, http::Responder respond) {
    respond(http::JsonResponse(200, "{}"));
  };
  router.Handle("GET", "/v2/health/live", ok);
  router.Handle("GET", "/v2/health/ready", ok);
  router.Handle("GET", "/sluice/v1/stats", [this](http::Request& r, http::Responder w) {
    OnStats(r, std::move(w));
  });
  router.Handle("POST", "/sluice/v1/generate", [this](http::Request& r, http::Responder w) {
    OnGenerate(r, std::move(w));
  });
  router.Handle("POST", "/sluice/v1/role", [this](http::Request& r, http::Responder w) {
    OnRole(r, std::move(w));
  });
  router.Handle("POST", "/sluice/v1/prefill", [this](http::Request& r, http::Responder w) {
    OnPrefill(r, std::move(w));
  });
  router.Handle("POST", "/sluice/v1/kv/{request_id}", [this](http::Request& r, http::Responder w) {
    OnKv(r, std::move(w));
  });
  router.Handle("POST", "/sluice/v1/decode", [this](http::Request& r, http::Responder w) {
    OnDecode(r, std::move(w));
  });
  router.Handle("POST", "/sluice/v1/cancel/{request_id}",
                [this](http::Request& r, http::Responder w) { OnCancel(r, std::move(w)); });
  router.Handle("POST", "/sluice/v1/trial", [this](http::Request& r, http::Responder w) {
    OnTrial(r, std::move(w));
  });
}

void LlmServer::OnStats(http::Request&, http::Responder respond) {
  const core::LlmModelSpec& s = engine_.model().spec();
  Json j = {{"role", LlmRoleName(options_.role)},  {"model", s.name},
            {"gpu", s.gpu},                         {"tp", s.tp},
            {"kv_capacity_tokens", engine_.kv_capacity_tokens()},
            {"kv_used_tokens", engine_.kv_used_tokens()},
            {"running", engine_.running()},         {"waiting", engine_.waiting()},
            {"iterations", engine_.iterations()},   {"kv_entries", kv_.size()},
            {"prompt_tokens_total", engine_.prompt_tokens_total()},
            {"generated_tokens_total", engine_.generated_tokens_total()},
            {"waiting_prompt_tokens", engine_.waiting_prompt_tokens()},
            {"generate_requests", generate_requests_},
            {"prefill_requests", prefill_requests_},
            {"decode_requests", decode_requests_},
            {"cancelled_requests", cancelled_requests_}};
  respond(http::JsonResponse(200, j.dump()));
}

void LlmServer::OnCancel(http::Request& req, http::Responder respond) {
  const std::string id = req.param("request_id");
  const bool had_kv = kv_.erase(id) > 0;  // a decode that has not started: its KV goes
  if (!engine_.Cancel(id) && !had_kv) {
    return respond(http::ErrorResponse(
        404, absl::StrCat("request_id: no request '", id, "' on this instance")));
  }
  ++cancelled_requests_;
  respond(http::JsonResponse(200, Json{{"cancelled", id}}.dump()));
}

void LlmServer::OnRole(http::Request& req, http::Responder respond) {
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("role") ||
      !body["role"].is_string()) {
    return respond(http::ErrorResponse(400, "role: body must be {\"role\": \"prefill|decode|"
                                            "colocated\"}"));
  }
  absl::StatusOr<LlmRole> role = ParseLlmRole(body["role"].get<std::string>());
  if (!role.ok())
    return respond(http::ErrorResponse(400, std::string(role.status().message())));
  if (*role == LlmRole::kPrefill && !kv_.empty()) {
    return respond(http::ErrorResponse(
        409, absl::StrCat("role: holds KV of ", kv_.size(), " requests; decode them first")));
  }
  Json j = {{"previous", LlmRoleName(options_.role)}, {"role", LlmRoleName(*role)}};
  options_.role = *role;
  respond(http::JsonResponse(200, j.dump()));
}

namespace {

// Fills the GenJob fields common to generate and prefill from a JSON body; an error names the
// field.
absl::Status ParseGenBody(const Json& body, bool need_max_tokens, GenJob& job, bool& stream) {
  if (!body.is_object())
    return absl::InvalidArgumentError("body: must be a JSON object");
  if (!body.contains("prompt") || !body["prompt"].is_string())
    return absl::InvalidArgumentError("prompt: required, a string");
  const std::string prompt = body["prompt"].get<std::string>();
  job.prompt_tokens = CountPromptTokens(prompt);
  job.seed = PromptSeed(prompt);
  if (body.contains("max_tokens")) {
    if (!body["max_tokens"].is_number_integer() || body["max_tokens"].get<int64_t>() < 1 ||
        body["max_tokens"].get<int64_t>() > (1 << 20)) {
      return absl::InvalidArgumentError("max_tokens: must be an integer in [1, 1048576]");
    }
    job.max_tokens = body["max_tokens"].get<int>();
  } else if (need_max_tokens) {
    job.max_tokens = 16;
  }
  if (body.contains("stop")) {
    if (!body["stop"].is_array())
      return absl::InvalidArgumentError("stop: must be an array of strings");
    for (const Json& s : body["stop"]) {
      if (!s.is_string())
        return absl::InvalidArgumentError("stop: must be an array of strings");
      job.stop.push_back(s.get<std::string>());
    }
  }
  stream = body.contains("stream") && body["stream"].is_boolean() && body["stream"].get<bool>();
  if (body.contains("request_id") && body["request_id"].is_string())
    job.request_id = body["request_id"].get<std::string>();
  return absl::OkStatus();
}

}  // namespace

void LlmServer::OnGenerate(http::Request& req, http::Responder respond) {
  if (options_.role != LlmRole::kColocated) {
    return respond(http::ErrorResponse(
        409, absl::StrCat("role: this instance is ", LlmRoleName(options_.role),
                          "; /sluice/v1/generate needs a colocated instance")));
  }
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded())
    return respond(http::ErrorResponse(400, "body: not valid JSON"));
  GenJob job;
  bool stream = false;
  if (absl::Status s = ParseGenBody(body, true, job, stream); !s.ok())
    return respond(http::ErrorResponse(400, std::string(s.message())));
  if (job.request_id.empty())
    job.request_id = absl::StrCat("gen-", next_id_++);
  if (RunAndAnswer(std::move(job), stream, std::move(respond)))
    ++generate_requests_;
}

bool LlmServer::RunAndAnswer(GenJob job, bool stream, http::Responder respond) {
  struct Acc {
    std::string text;
    http::Responder respond;
    std::shared_ptr<http::ResponseStream> events;  // streaming only, once accepted
  };
  auto acc = std::make_shared<Acc>();
  acc->respond = std::move(respond);
  const bool skip_first = job.from_kv;
  job.on_token = [acc, skip_first](int index, const std::string& text) {
    if (skip_first && index == 0)
      return;
    acc->text += text;
    if (acc->events != nullptr) {
      acc->events->Write(
          absl::StrCat("data: ", Json{{"index", index}, {"text", text}}.dump(), "\n\n"));
    }
  };
  const int uncounted = job.from_kv && !job.count_first ? 1 : 0;
  job.on_done = [acc, uncounted](const std::string& reason, int prompt, int completion) {
    Json j = {{"finish_reason", reason},
              {"prompt_tokens", prompt},
              {"completion_tokens", completion - uncounted}};
    if (acc->events == nullptr) {
      j["text"] = acc->text;
      return acc->respond(http::JsonResponse(200, j.dump()));
    }
    j["done"] = true;
    acc->events->Write(absl::StrCat("data: ", j.dump(), "\n\n"));
    acc->events->End();
    acc->events.reset();
  };
  absl::Status s = engine_.Submit(std::move(job));
  if (!s.ok()) {
    acc->respond(http::ErrorResponse(400, std::string(s.message())));
    return false;
  }
  if (stream) {  // accepted: the head goes out now, each token as its iteration ends
    http::Response head;
    head.content_type = "text/event-stream";
    head.headers = {{"cache-control", "no-cache"}};
    acc->events = acc->respond.Stream(std::move(head));
  }
  return true;
}

}  // namespace sluice::examples
