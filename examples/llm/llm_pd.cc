// Prefill/decode disaggregation of the LLM instance API: /sluice/v1/prefill (prefill, then push
// the emulated KV to the decode instance), /sluice/v1/kv/{id} (KV intake) and /sluice/v1/decode.
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "llm_server.h"
#include "nlohmann/json.hpp"

namespace sluice::examples {

using Json = nlohmann::json;

void LlmServer::OnPrefill(http::Request& req, http::Responder respond) {
  if (options_.role == LlmRole::kDecode) {
    return respond(http::ErrorResponse(
        409, "role: this instance is decode; /sluice/v1/prefill needs prefill or colocated"));
  }
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return respond(http::ErrorResponse(400, "body: not a JSON object"));
  for (const char* field : {"request_id", "prompt", "decode_url"}) {
    if (!body.contains(field) || !body[field].is_string() || body[field].get<std::string>().empty())
      return respond(http::ErrorResponse(400, absl::StrCat(field, ": required, a string")));
  }
  const std::string decode_url = body["decode_url"].get<std::string>();
  if (!http::Endpoint::Parse(decode_url).ok())
    return respond(http::ErrorResponse(400, absl::StrCat("decode_url: cannot parse '",
                                                         decode_url, "'")));
  const std::string prompt = body["prompt"].get<std::string>();
  GenJob job;
  job.request_id = body["request_id"].get<std::string>();
  job.prompt_tokens = CountPromptTokens(prompt);
  job.seed = PromptSeed(prompt);
  job.max_tokens = 1;
  job.prefill_only = true;
  auto first = std::make_shared<std::string>();
  auto slot = std::make_shared<http::Responder>(std::move(respond));
  job.on_token = [first](int, const std::string& text) { *first = text; };
  const std::string id = job.request_id;
  const uint64_t seed = job.seed;
  job.on_done = [this, first, slot, decode_url, id, seed](const std::string&, int prompt_tokens,
                                                          int) {
    KvEntry e{prompt_tokens, seed, *first, KvBytes(prompt_tokens)};
    PushKv(decode_url, id, std::move(e), std::move(*slot));
  };
  absl::Status s = engine_.Submit(std::move(job));
  if (!s.ok())
    (*slot)(http::ErrorResponse(400, std::string(s.message())));
  else
    ++prefill_requests_;
}

void LlmServer::PushKv(const std::string& decode_url, const std::string& id, KvEntry entry,
                       http::Responder respond) {
  http::Request req;
  req.method = "POST";
  req.target = absl::StrCat("/sluice/v1/kv/", id);
  req.headers = {{"content-type", "application/octet-stream"},
                 {"x-sluice-prompt-tokens", absl::StrCat(entry.prompt_tokens)},
                 {"x-sluice-seed", absl::StrCat(entry.seed)},
                 {"x-sluice-kv-bytes", absl::StrCat(entry.bytes)}};
  req.body.assign(static_cast<size_t>(entry.bytes), 'k');
  Json answer = {{"request_id", id},
                 {"text", entry.first_text},
                 {"prompt_tokens", entry.prompt_tokens},
                 {"kv_bytes", entry.bytes}};
  auto endpoint = http::Endpoint::Parse(decode_url);
  client_->Send(*endpoint, std::move(req), absl::Seconds(30),
                [respond = std::move(respond), answer, decode_url](
                    absl::StatusOr<http::Response> r) mutable {
                  if (!r.ok() || r->status != 200) {
                    std::string why = r.ok() ? absl::StrCat("HTTP ", r->status, ": ", r->body)
                                             : std::string(r.status().message());
                    return respond(http::ErrorResponse(
                        502, absl::StrCat("decode_url: KV push to ", decode_url,
                                          " failed: ", why)));
                  }
                  respond(http::JsonResponse(200, answer.dump()));
                });
}

void LlmServer::OnKv(http::Request& req, http::Responder respond) {
  if (options_.role == LlmRole::kPrefill) {
    return respond(http::ErrorResponse(
        409, "role: this instance is prefill; KV goes to a decode or colocated instance"));
  }
  KvEntry e;
  if (!absl::SimpleAtoi(req.header("x-sluice-prompt-tokens"), &e.prompt_tokens) ||
      e.prompt_tokens < 1 || !absl::SimpleAtoi(req.header("x-sluice-seed"), &e.seed) ||
      !absl::SimpleAtoi(req.header("x-sluice-kv-bytes"), &e.bytes)) {
    return respond(http::ErrorResponse(
        400, "headers: x-sluice-prompt-tokens, x-sluice-seed, x-sluice-kv-bytes required"));
  }
  if (static_cast<int64_t>(req.body.size()) != e.bytes) {
    return respond(http::ErrorResponse(
        400, absl::StrCat("kv: got ", req.body.size(), " bytes, x-sluice-kv-bytes says ",
                          e.bytes, " (truncated transfer; nothing stored)")));
  }
  e.first_text = GeneratedToken(e.seed, 0);
  kv_[req.param("request_id")] = std::move(e);
  respond(http::JsonResponse(200, Json{{"stored", req.param("request_id")}}.dump()));
}

void LlmServer::OnDecode(http::Request& req, http::Responder respond) {
  if (options_.role == LlmRole::kPrefill) {
    return respond(http::ErrorResponse(
        409, "role: this instance is prefill; switch it with POST /sluice/v1/role first"));
  }
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("request_id") ||
      !body["request_id"].is_string()) {
    return respond(http::ErrorResponse(400, "request_id: required, a string"));
  }
  const std::string id = body["request_id"].get<std::string>();
  auto it = kv_.find(id);
  if (it == kv_.end()) {
    return respond(http::ErrorResponse(
        404, absl::StrCat("request_id: no KV for '", id, "' on this instance")));
  }
  GenJob job;
  job.request_id = id;
  job.prompt_tokens = it->second.prompt_tokens;
  job.seed = it->second.seed;
  job.from_kv = true;
  job.max_tokens = 16;
  if (body.contains("max_tokens")) {
    if (!body["max_tokens"].is_number_integer() || body["max_tokens"].get<int64_t>() < 1 ||
        body["max_tokens"].get<int64_t>() > (1 << 20)) {
      return respond(http::ErrorResponse(400, "max_tokens: must be an integer in [1, 1048576]"));
    }
    job.max_tokens = body["max_tokens"].get<int>();
  }
  // max_tokens counts the tokens after the prefill's first one (docs/platform.md); the engine's
  // count includes that first token, so it runs one more and the answer counts only its own.
  job.max_tokens += 1;
  job.count_first = false;
  const bool stream = body.contains("stream") && body["stream"].is_boolean() &&
                      body["stream"].get<bool>();
  // On success the engine holds this request's KV (reserved at admission); on refusal the
  // entry stays, so a retry with a smaller max_tokens still finds it.
  if (RunAndAnswer(std::move(job), stream, std::move(respond))) {
    kv_.erase(id);
    ++decode_requests_;
  }
}

}  // namespace sluice::examples
