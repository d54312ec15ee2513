// The gateway's OpenAI API for LLM functions (docs/platform.md, "OpenAI API"). A completion is
// admitted to its function's queue like any request (429 / 503 + Retry-After, cold-start hold and
// wake, deadlines), then sent alone to one instance's `POST /sluice/v1/generate` (the instance
// batches continuously itself), always streamed from the instance so TTFT and TPOT are measured
// for every request. The instance's token events are relayed as OpenAI chunks (stream: true) or
// gathered into one completion with usage. An instance that fails before its first token is
// retried elsewhere like a batch; a failure after it ends the stream with an OpenAI error event.
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "runtime/gateway/gateway_core.h"

namespace sluice::runtime::internal {
namespace {

http::Response SseHead() {
  http::Response head;
  head.content_type = "text/event-stream";
  head.headers.emplace_back("cache-control", "no-cache");
  return head;
}

const char* TypeOf(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 404: return "invalid_request_error";
    case 429: return "rate_limit_exceeded";
    case 504: return "timeout";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

// A platform error ({"error": {"code", "message"}}) in OpenAI's shape; headers kept.
http::Response ToOpenAi(http::Response r) {
  if (r.status < 400) return r;
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("type")) {
    return r;  // already OpenAI's shape
  }
  OpenAiError e;
  e.status = r.status;
  e.type = TypeOf(r.status);
  e.message = j.is_object() && j.contains("error") && j["error"].is_object()
                  ? j["error"].value("message", r.body)
                  : r.body;
  if (r.status == 429) e.code = "rate_limit_exceeded";
  http::Response out = OpenAiErrorResponse(e);
  out.headers = std::move(r.headers);
  return out;
}

// An instance's non-200 answer as the client's error: 400 is the prompt's fault (the instance
// checks only its length against the KV cache), anything else the function's (502).
OpenAiError InstanceRejection(const LlmCall& call, const std::string& who) {
  const nlohmann::json j = nlohmann::json::parse(call.upstream_body, nullptr, false);
  std::string message = call.upstream_body.substr(0, 300);
  if (j.is_object() && j.contains("error") && j["error"].is_object())
    message = j["error"].value("message", message);
  OpenAiError e;
  if (call.upstream_status == 400) {
    e.status = 400;
    e.param = call.request.chat ? "messages" : "prompt";
    e.code = "context_length_exceeded";
    e.message = absl::StrCat(who, " rejected the prompt: ", message);
    return e;
  }
  e.status = 502;
  e.type = "server_error";
  e.message = absl::StrCat(who, " answered HTTP ", call.upstream_status, ": ", message);
  return e;
}

http::Response Unservable(const std::string& model, const std::string& state) {
  http::Response out = OpenAiErrorResponse(
      {503, absl::StrCat("model '", model, "' cannot be served (state ", state, ")"),
       "server_error", "", ""});
  out.headers.emplace_back("retry-after", "1");
  return out;
}

http::Response QueueFull(const std::string& model, int64_t max_queued, absl::Duration after) {
  http::Response out = OpenAiErrorResponse(
      {429, absl::StrCat("queue of model '", model, "' is full (", max_queued, " requests)"),
       "rate_limit_exceeded", "", "rate_limit_exceeded"});
  out.headers.emplace_back("retry-after",
                           std::to_string(std::max<int64_t>(1, absl::ToInt64Seconds(after))));
  return out;
}

}  // namespace

void GatewayCore::HandleModels(http::Request&, http::Responder respond) {
  std::vector<std::string> names;
  for (const auto& [name, f] : functions_) {
    if (f->route.kind == "llm") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  respond(http::JsonResponse(200, ModelListBody(names, absl::ToUnixSeconds(absl::Now()))));
}

void GatewayCore::HandleOpenAi(http::Request& req, http::Responder respond, bool chat) {
  std::variant<OpenAiRequest, OpenAiError> parsed = ParseOpenAiRequest(req.body, chat);
  if (auto* e = std::get_if<OpenAiError>(&parsed)) return respond(OpenAiErrorResponse(*e));
  OpenAiRequest& r = std::get<OpenAiRequest>(parsed);
  auto it = functions_.find(r.model);
  if (it == functions_.end() || it->second->route.kind != "llm") {
    return respond(OpenAiErrorResponse(
        {404, absl::StrCat("The model '", r.model, "' does not exist (no LLM function of that name)"),
         "invalid_request_error", "model", "model_not_found"}));
  }
  FunctionState& f = *it->second;
  if (f.route.Unservable()) {
    metrics_.Requests(*f.metrics, r.model, 503).Inc();
    return respond(Unservable(r.model, f.route.state));
  }
  const absl::Time now = loop_.Now();
  const uint64_t id = next_id_++;
  const core::AdmitResult admit =
      f.queue.Admit({id, now, now + f.route.timeout}, f.dispatcher.ReadyCapacity());
  if (!admit.accepted) {
    metrics_.Requests(*f.metrics, r.model, 429).Inc();
    return respond(QueueFull(r.model, f.queue.max_queued(), admit.retry_after));
  }
  ++f.arrivals;
  PendingRequest& p = pending_[id];
  p.function = r.model;
  p.respond = std::move(respond);
  p.arrival = now;
  p.deadline = now + f.route.timeout;
  p.llm = std::make_shared<LlmCall>();
  p.llm->id = absl::StrCat(chat ? "chatcmpl-" : "cmpl-", id);
  p.llm->created = absl::ToUnixSeconds(absl::Now());
  p.llm->request = std::move(r);
  if (f.dispatcher.ready_count() == 0) {
    f.metrics->cold_starts->Inc();
    MaybeWake(f);
  }
  TryDispatch(f);
  f.metrics->queue_length->Set(static_cast<double>(f.queue.size()));
  Rearm(f);
}

void GatewayCore::SendLlm(FunctionState& f, int64_t instance, uint64_t id) {
  PendingRequest& p = pending_.at(id);
  ++p.attempts;
  if (!p.in_flight) {
    p.in_flight = true;
    f.in_flight_deadlines.emplace(p.deadline, id);
    ++f.in_flight_requests;
  }
  LlmCall& call = *p.llm;
  call.upstream_status = 0;
  call.upstream_body.clear();
  call.parser = SseParser();
  call.done.reset();
  call.failure.clear();
  f.dispatcher.OnDispatch(instance);
  f.metrics->batch_size->Observe(1);
  call.generating = instance;
  if (f.roles[instance] == "prefill" && !f.decode_ready.empty()) {
    // P/D: the least busy ready decode instance receives the KV and the rest of the tokens.
    int64_t decode = f.decode_ready.begin()->first;
    for (const auto& [d, open] : f.decode_ready) {
      if (open < f.decode_ready[decode]) decode = d;
    }
    return SendPrefill(f, instance, decode, id);
  }
  http::Request req;
  req.method = "POST";
  req.target = "/sluice/v1/generate";
  req.headers.emplace_back("content-type", "application/json");
  req.body = GenerateBody(call.request, call.id);
  http::StreamHandlers h;
  h.on_head = [call = p.llm](const http::Response& head) { call->upstream_status = head.status; };
  h.on_data = [this, id](std::string_view data) { OnLlmData(id, data); };
  h.done = [this, function = f.route.name, instance, id](absl::Status s) {
    OnLlmDone(function, instance, id, std::move(s));
  };
  const absl::Duration timeout = std::max(p.deadline - loop_.Now(), absl::Milliseconds(1));
  client_.Stream(f.endpoints.at(instance), std::move(req), timeout, std::move(h));
}

void GatewayCore::OnLlmData(uint64_t id, std::string_view data) {
  auto it = pending_.find(id);
  if (shut_down_ || it == pending_.end()) return;  // answered already (deadline)
  PendingRequest& p = it->second;
  LlmCall& call = *p.llm;
  if (call.upstream_status != 200) {
    if (call.upstream_body.size() < (64 << 10)) call.upstream_body.append(data);
    return;
  }
  for (const std::string& event : call.parser.Feed(data)) {
    InstanceEvent ev = ParseInstanceEvent(event);
    if (ev.kind == InstanceEvent::Kind::kDone) {
      call.done = std::move(ev);
    } else if (ev.kind != InstanceEvent::Kind::kToken) {
      if (call.failure.empty()) call.failure = std::move(ev.text);
    } else if (!call.done.has_value()) {
      OnLlmToken(p, ev.text);
    }
  }
  // A write to a client that has left fails; the instance need not finish for nobody.
  if (call.stream != nullptr && !call.stream->open() && !call.done.has_value()) CancelLlm(id);
}

void GatewayCore::CancelLlm(uint64_t id) {
  PendingRequest& p = pending_.at(id);
  LlmCall& call = *p.llm;
  auto f = functions_.find(p.function);
  if (f != functions_.end() && f->second->endpoints.contains(call.generating)) {
    http::Request req;
    req.method = "POST";
    req.target = absl::StrCat("/sluice/v1/cancel/", call.id);
    client_.Send(f->second->endpoints.at(call.generating), std::move(req), absl::Seconds(5),
                 [](absl::StatusOr<http::Response>) {});
  }
  Finish(id, http::ErrorResponse(499, "client disconnected"));
}

void GatewayCore::OnLlmToken(PendingRequest& p, const std::string& text) {
  LlmCall& call = *p.llm;
  const absl::Time now = loop_.Now();
  const bool first = call.tokens == 0;
  if (first) {
    call.first_token = now;
    auto f = functions_.find(p.function);
    if (f != functions_.end())
      f->second->metrics->ttft->Observe(absl::ToDoubleSeconds(now - p.arrival));
  }
  ++call.tokens;
  if (!call.request.stream) {
    call.text += text;
    return;
  }
  if (call.stream == nullptr) call.stream = p.respond.Stream(SseHead());
  call.stream->Write(ChunkEvent(call.request, call.id, call.created, text, first, {}));
}

void GatewayCore::OnLlmDone(const std::string& function, int64_t instance, uint64_t id,
                            absl::Status status) {
  if (shut_down_) return;
  auto fit = functions_.find(function);
  FunctionState* f = fit == functions_.end() ? nullptr : fit->second.get();
  if (f != nullptr) f->dispatcher.OnComplete(instance);
  if (pending_.contains(id)) EndLlm(f, instance, id, status);
  if (f != nullptr) {
    TryDispatch(*f);
    f->metrics->queue_length->Set(static_cast<double>(f->queue.size()));
    Rearm(*f);
  }
}

void GatewayCore::EndLlm(FunctionState* f, int64_t instance, uint64_t id,
                         const absl::Status& status) {
  PendingRequest& p = pending_.at(id);
  LlmCall& call = *p.llm;
  const std::string who = absl::StrCat("instance ", instance, " of '", p.function, "'");
  const bool started = call.tokens > 0;
  if (!status.ok() || call.upstream_status >= 500) {
    const std::string why = !status.ok() ? status.ToString()
                                         : absl::StrCat("HTTP ", call.upstream_status, ": ",
                                                        call.upstream_body.substr(0, 200));
    if (f != nullptr && absl::IsUnavailable(status) && f->roles[instance] != "decode")
      f->dispatcher.Upsert(instance, f->dispatcher.EffectiveCapacity(instance), false);
    if (!started) return RetryOrFail(f, instance, {id}, why);
    return Finish(id, http::ErrorResponse(502, absl::StrCat(who, " failed mid-stream: ", why)));
  }
  if (call.upstream_status != 200) {
    return Finish(id, OpenAiErrorResponse(InstanceRejection(call, who)));
  }
  if (!call.failure.empty() || !call.done.has_value()) {
    const std::string why =
        call.failure.empty() ? "the token stream ended without a done event" : call.failure;
    return Finish(id, http::ErrorResponse(502, absl::StrCat(who, ": ", why)));
  }
  CompleteLlm(f, id);
}

void GatewayCore::CompleteLlm(FunctionState* f, uint64_t id) {
  PendingRequest& p = pending_.at(id);
  LlmCall& call = *p.llm;
  InstanceEvent& done = *call.done;
  if (call.disaggregated) {  // the decode instance counted only its own tokens
    done.completion_tokens += 1;
    if (done.prompt_tokens == 0) done.prompt_tokens = call.prefill_prompt_tokens;
  }
  if (call.tokens >= 2 && f != nullptr) {
    f->metrics->tpot->Observe(absl::ToDoubleSeconds(loop_.Now() - call.first_token) /
                              static_cast<double>(call.tokens - 1));
  }
  const OpenAiRequest& r = call.request;
  if (!r.stream) {
    return Finish(id, http::JsonResponse(200, CompletionBody(r, call.id, call.created, call.text,
                                                             done.finish_reason, done.prompt_tokens,
                                                             done.completion_tokens)));
  }
  if (call.stream == nullptr) call.stream = p.respond.Stream(SseHead());
  call.stream->Write(ChunkEvent(r, call.id, call.created, "", call.tokens == 0,
                                done.finish_reason));
  if (r.include_usage) {
    call.stream->Write(UsageEvent(r, call.id, call.created, done.prompt_tokens,
                                  done.completion_tokens));
  }
  call.stream->Write(kDoneEvent);
  Finish(id, http::JsonResponse(200, ""));
}

void GatewayCore::FinishLlm(PendingRequest& p, http::Response response) {
  http::Response out = ToOpenAi(std::move(response));
  if (p.llm->stream == nullptr) return p.respond(std::move(out));
  if (out.status >= 400) p.llm->stream->Write(absl::StrCat("data: ", out.body, "\n\n"));
  p.llm->stream->End();
}

}  // namespace sluice::runtime::internal
