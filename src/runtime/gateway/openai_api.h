// The OpenAI-compatible API of the gateway for LLM functions (docs/platform.md, "OpenAI API"):
// parsing and strict validation of /v1/completions and /v1/chat/completions bodies, the chat
// template, the instance's generate body, OpenAI's response, chunk, model-list and error shapes,
// and an incremental parser of the instance's server-sent events. Pure functions and values: no
// I/O. Used by the gateway's LLM request path (gateway_openai.cc) and its tests.
// Thread safety: values; SseParser is not shared between threads.
#ifndef SLUICE_RUNTIME_GATEWAY_OPENAI_API_H_
#define SLUICE_RUNTIME_GATEWAY_OPENAI_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/http/http.h"

namespace sluice::runtime {

// Defaults when the body has no max_tokens: OpenAI's legacy completions default (16); chat has no
// published default, the gateway uses 256.
inline constexpr int64_t kDefaultCompletionMaxTokens = 16;
inline constexpr int64_t kDefaultChatMaxTokens = 256;

struct OpenAiRequest {
  bool chat = false;
  std::string model;
  std::string prompt;  // chat: the messages rendered with RenderChat
  int64_t max_tokens = kDefaultCompletionMaxTokens;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
};

// OpenAI's error object: {"error": {"message", "type", "param", "code"}} with an HTTP status.
struct OpenAiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // "" -> null
  std::string code;   // "" -> null
};

http::Response OpenAiErrorResponse(const OpenAiError& e);
// The same error as one server-sent event, for failures after a stream has started.
std::string OpenAiErrorEvent(const OpenAiError& e);

// Parses and validates a body. Errors name the field in `param` and the message: malformed JSON,
// missing model / prompt / messages, wrong types, n != 1, max_tokens < 1, more than 4 stop
// sequences, unknown message roles. temperature, top_p, user and the like are accepted and
// ignored (the example function decodes greedily).
std::variant<OpenAiRequest, OpenAiError> ParseOpenAiRequest(std::string_view body, bool chat);

// The chat template: one "<|role|>\n" header per message followed by its content and a newline,
// then "<|assistant|>\n" to prompt the answer. Deterministic and model-agnostic (the example
// function's tokenizer is byte-level; a real model would bring its own template).
std::string RenderChat(const std::vector<std::pair<std::string, std::string>>& messages);

// The instance API's generate body (always streamed from the instance, so the gateway measures
// TTFT and TPOT for every request).
std::string GenerateBody(const OpenAiRequest& r, const std::string& request_id);

// One OpenAI streaming chunk as a server-sent event ("data: {...}\n\n"): `text` as
// choices[0].text (completions) or choices[0].delta.content (chat; the first chunk also carries
// "role": "assistant"); finish_reason null until the last one.
std::string ChunkEvent(const OpenAiRequest& r, const std::string& id, int64_t created,
                       const std::string& text, bool first,
                       const std::optional<std::string>& finish_reason);
// The closing chunk with usage (stream_options.include_usage) and "data: [DONE]".
std::string UsageEvent(const OpenAiRequest& r, const std::string& id, int64_t created,
                       int64_t prompt_tokens, int64_t completion_tokens);
inline constexpr char kDoneEvent[] = "data: [DONE]\n\n";

// The non-streaming answer: text_completion or chat.completion with usage.
std::string CompletionBody(const OpenAiRequest& r, const std::string& id, int64_t created,
                           const std::string& text, const std::string& finish_reason,
                           int64_t prompt_tokens, int64_t completion_tokens);

// GET /v1/models: {"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}.
std::string ModelListBody(const std::vector<std::string>& models, int64_t created);

// One event of the instance's token stream (instance API of examples/llm).
struct InstanceEvent {
  enum class Kind { kToken, kDone, kError, kMalformed };
  Kind kind = Kind::kMalformed;
  std::string text;           // kToken; kError/kMalformed: the message
  std::string finish_reason;  // kDone: "length" | "stop"
  int64_t prompt_tokens = 0, completion_tokens = 0;
};

// Splits a server-sent event stream into the payloads of its "data:" lines, across arbitrary
// piece boundaries (events end with a blank line; "\r\n" accepted; comments ignored).
class SseParser {
 public:
  // Appends `piece` and returns the data of every event completed by it.
  std::vector<std::string> Feed(std::string_view piece);

 private:
  std::string buffer_;
};

InstanceEvent ParseInstanceEvent(std::string_view data);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_GATEWAY_OPENAI_API_H_
