// FakeLlmInstance: see fake_llm_instance.h. Each generate request runs on its own worker thread
// that writes token events to the Responder's stream, so a slow stream never blocks the loop.
#include "runtime/gateway/testing/fake_llm_instance.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime::testing {
namespace {

using json = nlohmann::json;

struct Generation {
  std::string text;
  std::vector<std::string> tokens;
  std::string finish_reason = "length";
};

// Tokens "t0 ", "t1 ", ... until max_tokens or a stop sequence appears in the text.
Generation Generate(int64_t max_tokens, const std::vector<std::string>& stop, int64_t first = 0) {
  Generation g;
  for (int64_t i = first; i < first + max_tokens; ++i) {
    std::string token = absl::StrCat("t", i, " ");
    const std::string next = g.text + token;
    for (const std::string& s : stop) {
      if (!s.empty() && next.find(s) != std::string::npos) {
        g.finish_reason = "stop";
        return g;
      }
    }
    g.text = next;
    g.tokens.push_back(std::move(token));
  }
  return g;
}

}  // namespace

FakeLlmInstance::FakeLlmInstance(int64_t id, FakeLlmOptions options)
    : id_(id), options_(options) {
  loop_ = *http::EventLoop::Create();
  http::Router router;
  router.Handle("POST", "/sluice/v1/generate", [this](http::Request& req, http::Responder r) {
    OnGenerate(req, std::move(r));
  });
  router.Handle("POST", "/sluice/v1/prefill", [this](http::Request& req, http::Responder r) {
    OnPrefill(req, std::move(r));
  });
  router.Handle("POST", "/sluice/v1/decode", [this](http::Request& req, http::Responder r) {
    OnDecode(req, std::move(r));
  });
  router.Handle("POST", "/sluice/v1/cancel/{request_id}",
                [this](http::Request& req, http::Responder r) {
                  absl::MutexLock lock(&mu_);
                  cancels_.push_back(req.param("request_id"));
                  r(http::JsonResponse(200, json({{"cancelled", req.param("request_id")}}).dump()));
                });
  router.Handle("GET", "/sluice/v1/health", [](http::Request&, http::Responder r) {
    r(http::JsonResponse(200, R"({"ok":true})"));
  });
  server_ = *http::Server::Start(*loop_, {}, std::move(router));
  port_ = server_->port();
}

FakeLlmInstance::~FakeLlmInstance() {
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&mu_);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
  server_.reset();
  loop_.reset();
}

std::string FakeLlmInstance::url() const { return absl::StrCat("127.0.0.1:", port_); }

void FakeLlmInstance::set_options(const FakeLlmOptions& o) {
  absl::MutexLock lock(&mu_);
  options_ = o;
}

int FakeLlmInstance::requests_received() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

std::vector<std::string> FakeLlmInstance::prompts() const {
  absl::MutexLock lock(&mu_);
  return prompts_;
}

std::vector<std::string> FakeLlmInstance::cancels() const {
  absl::MutexLock lock(&mu_);
  return cancels_;
}

int FakeLlmInstance::tokens_written() const {
  absl::MutexLock lock(&mu_);
  return tokens_written_;
}

bool FakeLlmInstance::Cancelled(const std::string& request_id) const {
  absl::MutexLock lock(&mu_);
  return std::find(cancels_.begin(), cancels_.end(), request_id) != cancels_.end();
}

std::vector<std::string> FakeLlmInstance::kv_pushes() const {
  absl::MutexLock lock(&mu_);
  return kv_pushes_;
}

void FakeLlmInstance::OnPrefill(http::Request& req, http::Responder respond) {
  const json body = json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("prompt") || !body["prompt"].is_string() ||
      !body.contains("decode_url") || !body["decode_url"].is_string()) {
    return respond(http::ErrorResponse(400, "prompt, decode_url: missing"));
  }
  const auto prompt_tokens = static_cast<int64_t>(body["prompt"].get<std::string>().size());
  FakeLlmOptions o;
  {
    absl::MutexLock lock(&mu_);
    ++requests_;
    prompts_.push_back(body["prompt"].get<std::string>());
    kv_pushes_.push_back(body["decode_url"].get<std::string>());
    o = options_;
  }
  if (o.fail_500) return respond(http::ErrorResponse(500, "fake prefill failure"));
  if (prompt_tokens > o.kv_capacity_tokens) {
    return respond(http::ErrorResponse(
        400, absl::StrCat("prompt of ", prompt_tokens, " tokens exceeds the KV cache of ",
                          o.kv_capacity_tokens, " tokens")));
  }
  respond(http::JsonResponse(200, json({{"text", "t0 "}, {"prompt_tokens", prompt_tokens}}).dump()));
}

void FakeLlmInstance::OnDecode(http::Request& req, http::Responder respond) {
  const json body = json::parse(req.body, nullptr, false);
  if (!body.is_object()) return respond(http::ErrorResponse(400, "body: not JSON"));
  std::vector<std::string> stop;
  if (body.contains("stop") && body["stop"].is_array()) {
    for (const json& s : body["stop"]) stop.push_back(s.get<std::string>());
  }
  FakeLlmOptions o;
  {
    absl::MutexLock lock(&mu_);
    ++requests_;
    o = options_;
  }
  Generation g = Generate(body.value("max_tokens", int64_t{16}), stop, /*first=*/1);
  const json done = {{"done", true},
                     {"finish_reason", g.finish_reason},
                     {"prompt_tokens", 0},
                     {"completion_tokens", static_cast<int64_t>(g.tokens.size())}};
  StreamTokens(std::move(respond), std::move(g.tokens), done.dump(), o,
               body.value("request_id", std::string()));
}

void FakeLlmInstance::StreamTokens(http::Responder respond, std::vector<std::string> tokens,
                                   std::string done_event, const FakeLlmOptions& o,
                                   std::string request_id) {
  http::Response head;
  head.content_type = "text/event-stream";
  std::shared_ptr<http::ResponseStream> out = respond.Stream(std::move(head));
  absl::MutexLock lock(&mu_);
  workers_.emplace_back([this, out, tokens = std::move(tokens),
                         done_event = std::move(done_event), o, id = std::move(request_id)] {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (o.fail_after_tokens >= 0 && static_cast<int>(i) == o.fail_after_tokens) return;
      absl::SleepFor(o.token_delay);
      if (!id.empty() && Cancelled(id)) return;  // cut: dropped without End
      out->Write(absl::StrCat("data: ", json({{"index", i}, {"text", tokens[i]}}).dump(), "\n\n"));
      absl::MutexLock counted(&mu_);
      ++tokens_written_;
    }
    if (o.fail_after_tokens >= 0) return;  // dropped without End: the connection breaks
    out->Write(absl::StrCat("data: ", done_event, "\n\n"));
    out->End();
  });
}

void FakeLlmInstance::OnGenerate(http::Request& req, http::Responder respond) {
  const json body = json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("prompt") || !body["prompt"].is_string()) {
    return respond(http::ErrorResponse(400, "prompt: missing"));
  }
  const std::string prompt = body["prompt"].get<std::string>();
  const int64_t max_tokens = body.value("max_tokens", int64_t{16});
  const bool stream = body.value("stream", false);
  std::vector<std::string> stop;
  if (body.contains("stop") && body["stop"].is_array()) {
    for (const json& s : body["stop"]) stop.push_back(s.get<std::string>());
  }
  FakeLlmOptions o;
  {
    absl::MutexLock lock(&mu_);
    ++requests_;
    prompts_.push_back(prompt);
    o = options_;
  }
  if (o.fail_500) return respond(http::ErrorResponse(500, "fake instance failure"));
  const auto prompt_tokens = static_cast<int64_t>(prompt.size());
  if (prompt_tokens > o.kv_capacity_tokens) {
    return respond(http::ErrorResponse(
        400, absl::StrCat("prompt of ", prompt_tokens, " tokens exceeds the KV cache of ",
                          o.kv_capacity_tokens, " tokens")));
  }
  Generation g = Generate(max_tokens, stop);
  const json done = {{"done", true},
                     {"finish_reason", g.finish_reason},
                     {"prompt_tokens", prompt_tokens},
                     {"completion_tokens", static_cast<int64_t>(g.tokens.size())}};
  if (!stream) {
    return respond(http::JsonResponse(
        200, json({{"text", g.text},
                   {"finish_reason", g.finish_reason},
                   {"prompt_tokens", prompt_tokens},
                   {"completion_tokens", static_cast<int64_t>(g.tokens.size())}})
                 .dump()));
  }
  StreamTokens(std::move(respond), std::move(g.tokens), done.dump(), o,
               body.value("request_id", std::string()));
}

}  // namespace sluice::runtime::testing
