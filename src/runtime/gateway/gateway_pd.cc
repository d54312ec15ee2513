// Prefill/decode disaggregation on the gateway's LLM path (docs/platform.md, "OpenAI API"). For
// a function whose route has decode instances, a dispatched request goes to a prefill instance
// (`POST /sluice/v1/prefill` {request_id, prompt, decode_url, max_tokens, stop}); that instance
// computes the KV cache, pushes it to the decode instance and answers the first token
// ({"text", "prompt_tokens"[, "finish_reason"]}). The gateway relays that token at once (TTFT),
// then streams `POST /sluice/v1/decode` {request_id, max_tokens: the rest, stop, stream: true}
// from the decode instance like a generate stream. A prefill failure is retried on another
// prefill instance; a decode failure after the first token ends the stream with an error event.
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "runtime/gateway/gateway_core.h"

namespace sluice::runtime::internal {

void GatewayCore::SendPrefill(FunctionState& f, int64_t instance, int64_t decode, uint64_t id) {
  PendingRequest& p = pending_.at(id);
  const LlmCall& call = *p.llm;
  http::Request req;
  req.method = "POST";
  req.target = "/sluice/v1/prefill";
  req.headers.emplace_back("content-type", "application/json");
  req.body = nlohmann::json({{"request_id", call.id},
                             {"prompt", call.request.prompt},
                             {"decode_url", absl::StrCat("http://", f.endpoints.at(decode).ToString())},
                             {"max_tokens", call.request.max_tokens},
                             {"stop", call.request.stop}})
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const absl::Duration timeout = std::max(p.deadline - loop_.Now(), absl::Milliseconds(1));
  client_.Send(f.endpoints.at(instance), std::move(req), timeout,
               [this, function = f.route.name, instance, decode,
                id](absl::StatusOr<http::Response> r) {
                 OnPrefillDone(function, instance, decode, id, std::move(r));
               });
}

void GatewayCore::OnPrefillDone(const std::string& function, int64_t instance, int64_t decode,
                                uint64_t id, absl::StatusOr<http::Response> result) {
  if (shut_down_) return;
  auto fit = functions_.find(function);
  FunctionState* f = fit == functions_.end() ? nullptr : fit->second.get();
  if (f != nullptr) f->dispatcher.OnComplete(instance);
  auto it = pending_.find(id);
  if (it != pending_.end()) {
    LlmCall& call = *it->second.llm;
    if (result.ok()) {
      call.upstream_status = result->status;
      call.upstream_body = result->body;
    }
    const nlohmann::json j = result.ok() && result->status == 200
                                 ? nlohmann::json::parse(result->body, nullptr, false)
                                 : nlohmann::json();
    if (!result.ok() || result->status >= 500 || result->status != 200 || !j.is_object() ||
        !j.contains("text") || !j["text"].is_string() || f == nullptr ||
        !f->endpoints.contains(decode)) {
      // Errors, rejections (4xx) and malformed answers take the generate path's handling.
      if (result.ok() && result->status == 200) call.upstream_status = 502;
      EndLlm(f, instance, id, result.ok() ? absl::OkStatus() : result.status());
    } else {
      call.disaggregated = true;
      call.prefill_prompt_tokens = j.value("prompt_tokens", int64_t{0});
      OnLlmToken(it->second, j["text"].get<std::string>());
      const std::string finish = j.value("finish_reason", std::string());
      if (call.request.max_tokens <= 1 || !finish.empty()) {
        InstanceEvent done;
        done.kind = InstanceEvent::Kind::kDone;
        done.finish_reason = finish.empty() ? "length" : finish;
        call.done = done;
        EndLlm(f, instance, id, absl::OkStatus());
      } else if (call.stream != nullptr && !call.stream->open()) {
        call.generating = decode;  // the client left during the prefill: no decode, and the
        CancelLlm(id);             // decode instance drops the KV it was pushed
      } else {
        SendDecode(*f, decode, id);
      }
    }
  }
  if (f != nullptr) {
    TryDispatch(*f);
    f->metrics->queue_length->Set(static_cast<double>(f->queue.size()));
    Rearm(*f);
  }
}

void GatewayCore::SendDecode(FunctionState& f, int64_t decode, uint64_t id) {
  PendingRequest& p = pending_.at(id);
  LlmCall& call = *p.llm;
  call.upstream_status = 0;
  call.upstream_body.clear();
  call.parser = SseParser();
  call.generating = decode;
  ++f.decode_ready[decode];
  http::Request req;
  req.method = "POST";
  req.target = "/sluice/v1/decode";
  req.headers.emplace_back("content-type", "application/json");
  req.body = nlohmann::json({{"request_id", call.id},
                             {"max_tokens", call.request.max_tokens - 1},
                             {"stop", call.request.stop},
                             {"stream", true}})
                 .dump();
  http::StreamHandlers h;
  h.on_head = [call = p.llm](const http::Response& head) { call->upstream_status = head.status; };
  h.on_data = [this, id](std::string_view data) { OnLlmData(id, data); };
  h.done = [this, function = f.route.name, decode, id](absl::Status s) {
    if (shut_down_) return;
    auto fit = functions_.find(function);
    FunctionState* fs = fit == functions_.end() ? nullptr : fit->second.get();
    if (fs != nullptr && fs->decode_ready.contains(decode)) --fs->decode_ready[decode];
    if (pending_.contains(id)) EndLlm(fs, decode, id, s);
  };
  const absl::Duration timeout = std::max(p.deadline - loop_.Now(), absl::Milliseconds(1));
  client_.Stream(f.endpoints.at(decode), std::move(req), timeout, std::move(h));
}

}  // namespace sluice::runtime::internal
