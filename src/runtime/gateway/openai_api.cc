// OpenAI request validation and response shapes for LLM functions (openai_api.h). Every error
// names the offending field in `param` and in its message, as OpenAI's own API does.
#include "runtime/gateway/openai_api.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

using json = nlohmann::json;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json NullIfEmpty(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

OpenAiError Invalid(const std::string& param, const std::string& why) {
  OpenAiError e;
  e.param = param;
  e.message = absl::StrCat(param, ": ", why);
  return e;
}

std::optional<OpenAiError> ParseStop(const json& body, OpenAiRequest& r) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    r.stop.push_back(it->get<std::string>());
    return std::nullopt;
  }
  if (!it->is_array() || it->size() > 4) {
    return Invalid("stop", "must be a string or an array of at most 4 strings");
  }
  for (const json& s : *it) {
    if (!s.is_string()) return Invalid("stop", "every stop sequence must be a string");
    r.stop.push_back(s.get<std::string>());
  }
  return std::nullopt;
}

std::optional<OpenAiError> ParseMessages(const json& body, OpenAiRequest& r) {
  auto it = body.find("messages");
  if (it == body.end()) return Invalid("messages", "missing (required for chat completions)");
  if (!it->is_array() || it->empty()) return Invalid("messages", "must be a non-empty array");
  std::vector<std::pair<std::string, std::string>> messages;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string at = absl::StrCat("messages[", i, "]");
    if (!m.is_object()) return Invalid(at, "must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return Invalid(at + ".role", "missing");
    const std::string who = role->get<std::string>();
    if (who != "system" && who != "user" && who != "assistant" && who != "developer") {
      return Invalid(at + ".role", "must be system, developer, user or assistant");
    }
    auto content = m.find("content");
    std::string text;
    if (content != m.end() && content->is_string()) {
      text = content->get<std::string>();
    } else if (content != m.end() && content->is_array()) {  // [{"type": "text", "text"}]
      for (const json& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
          return Invalid(at + ".content", "only text parts are supported");
        }
        text += part["text"].get<std::string>();
      }
    } else {
      return Invalid(at + ".content", "must be a string or an array of text parts");
    }
    messages.emplace_back(who, std::move(text));
  }
  r.prompt = RenderChat(messages);
  return std::nullopt;
}

std::optional<OpenAiError> ParsePrompt(const json& body, OpenAiRequest& r) {
  auto it = body.find("prompt");
  if (it == body.end()) return Invalid("prompt", "missing (required for completions)");
  if (it->is_string()) {
    r.prompt = it->get<std::string>();
    return std::nullopt;
  }
  if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
    r.prompt = (*it)[0].get<std::string>();
    return std::nullopt;
  }
  return Invalid("prompt", "must be a string (or an array of exactly one string)");
}

std::optional<OpenAiError> ParseOptions(const json& body, OpenAiRequest& r) {
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) continue;
    if (!it->is_number_integer() || it->get<int64_t>() < 1) {
      return Invalid(key, "must be an integer >= 1");
    }
    r.max_tokens = it->get<int64_t>();
  }
  if (auto it = body.find("n"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() != 1) {
      return Invalid("n", "only n = 1 is supported");
    }
  }
  if (auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return Invalid("stream", "must be a boolean");
    r.stream = it->get<bool>();
  }
  if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return Invalid("stream_options", "must be an object");
    r.include_usage = it->value("include_usage", false);
  }
  for (const char* key : {"temperature", "top_p"}) {
    auto it = body.find(key);
    if (it != body.end() && !it->is_null() && !it->is_number()) {
      return Invalid(key, "must be a number");
    }
  }
  return ParseStop(body, r);
}

}  // namespace

http::Response OpenAiErrorResponse(const OpenAiError& e) {
  const json body = {{"error",
                      {{"message", e.message},
                       {"type", e.type},
                       {"param", NullIfEmpty(e.param)},
                       {"code", NullIfEmpty(e.code)}}}};
  return http::JsonResponse(e.status, Dump(body));
}

std::string OpenAiErrorEvent(const OpenAiError& e) {
  return absl::StrCat("data: ", OpenAiErrorResponse(e).body, "\n\n");
}

std::variant<OpenAiRequest, OpenAiError> ParseOpenAiRequest(std::string_view body, bool chat) {
  const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return OpenAiError{400, "request body is not valid JSON", "invalid_request_error", "", ""};
  }
  if (!doc.is_object()) return Invalid("body", "must be a JSON object");
  OpenAiRequest r;
  r.chat = chat;
  r.max_tokens = chat ? kDefaultChatMaxTokens : kDefaultCompletionMaxTokens;
  auto model = doc.find("model");
  if (model == doc.end() || !model->is_string() || model->get<std::string>().empty()) {
    return Invalid("model", "missing (the name of an LLM function)");
  }
  r.model = model->get<std::string>();
  if (auto e = chat ? ParseMessages(doc, r) : ParsePrompt(doc, r)) return *e;
  if (auto e = ParseOptions(doc, r)) return *e;
  return r;
}

std::string RenderChat(const std::vector<std::pair<std::string, std::string>>& messages) {
  std::string out;
  for (const auto& [role, content] : messages) absl::StrAppend(&out, "<|", role, "|>\n", content, "\n");
  absl::StrAppend(&out, "<|assistant|>\n");
  return out;
}

std::string GenerateBody(const OpenAiRequest& r, const std::string& request_id) {
  return Dump({{"request_id", request_id},
               {"prompt", r.prompt},
               {"max_tokens", r.max_tokens},
               {"stop", r.stop},
               {"stream", true}});
}

namespace {

json Envelope(const OpenAiRequest& r, const std::string& id, int64_t created, bool chunk) {
  const char* object = r.chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                              : "text_completion";
  return {{"id", id}, {"object", object}, {"created", created}, {"model", r.model}};
}

json Usage(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

}  // namespace

std::string ChunkEvent(const OpenAiRequest& r, const std::string& id, int64_t created,
                       const std::string& text, bool first,
                       const std::optional<std::string>& finish_reason) {
  json choice = {{"index", 0}, {"finish_reason", finish_reason ? json(*finish_reason) : json()}};
  if (r.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || !finish_reason) delta["content"] = text;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  json out = Envelope(r, id, created, true);
  out["choices"] = json::array({std::move(choice)});
  return absl::StrCat("data: ", Dump(out), "\n\n");
}

std::string UsageEvent(const OpenAiRequest& r, const std::string& id, int64_t created,
                       int64_t prompt_tokens, int64_t completion_tokens) {
  json out = Envelope(r, id, created, true);
  out["choices"] = json::array();
  out["usage"] = Usage(prompt_tokens, completion_tokens);
  return absl::StrCat("data: ", Dump(out), "\n\n");
}

std::string CompletionBody(const OpenAiRequest& r, const std::string& id, int64_t created,
                           const std::string& text, const std::string& finish_reason,
                           int64_t prompt_tokens, int64_t completion_tokens) {
  json choice = {{"index", 0}, {"finish_reason", finish_reason}};
  if (r.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  json out = Envelope(r, id, created, false);
  out["choices"] = json::array({std::move(choice)});
  out["usage"] = Usage(prompt_tokens, completion_tokens);
  return Dump(out);
}

std::string ModelListBody(const std::vector<std::string>& models, int64_t created) {
  json data = json::array();
  for (const std::string& m : models) {
    data.push_back({{"id", m}, {"object", "model"}, {"created", created}, {"owned_by", "sluice"}});
  }
  return Dump({{"object", "list"}, {"data", std::move(data)}});
}

std::vector<std::string> SseParser::Feed(std::string_view piece) {
  buffer_.append(piece);
  std::vector<std::string> events;
  size_t start = 0;
  while (true) {
    size_t end = buffer_.find("\n\n", start);
    size_t crlf = buffer_.find("\r\n\r\n", start);
    size_t sep = 2;
    if (crlf != std::string::npos && (end == std::string::npos || crlf < end)) {
      end = crlf;
      sep = 4;
    }
    if (end == std::string::npos) break;
    std::string data;
    bool any = false;
    std::string_view block(buffer_.data() + start, end - start);
    while (!block.empty()) {
      const size_t nl = block.find('\n');
      std::string_view line = block.substr(0, nl);
      block = nl == std::string_view::npos ? std::string_view() : block.substr(nl + 1);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.substr(0, 5) != "data:") continue;  // comments, event:, id:, retry:
      line.remove_prefix(5);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      if (any) data += '\n';
      data.append(line);
      any = true;
    }
    if (any) events.push_back(std::move(data));
    start = end + sep;
  }
  buffer_.erase(0, start);
  return events;
}

InstanceEvent ParseInstanceEvent(std::string_view data) {
  InstanceEvent ev;
  const json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    ev.text = absl::StrCat("instance sent a malformed event: ", std::string(data.substr(0, 120)));
    return ev;
  }
  if (auto e = j.find("error"); e != j.end()) {
    ev.kind = InstanceEvent::Kind::kError;
    ev.text = e->is_object() && e->contains("message") && (*e)["message"].is_string()
                  ? (*e)["message"].get<std::string>()
                  : Dump(*e);
    return ev;
  }
  if (j.value("done", false)) {
    ev.kind = InstanceEvent::Kind::kDone;
    ev.finish_reason = j.value("finish_reason", "length");
    ev.prompt_tokens = j.value("prompt_tokens", int64_t{0});
    ev.completion_tokens = j.value("completion_tokens", int64_t{0});
    return ev;
  }
  if (auto t = j.find("text"); t != j.end() && t->is_string()) {
    ev.kind = InstanceEvent::Kind::kToken;
    ev.text = t->get<std::string>();
    return ev;
  }
  ev.text = absl::StrCat("instance event has neither text nor done: ", std::string(data.substr(0, 120)));
  return ev;
}

}  // namespace sluice::runtime
