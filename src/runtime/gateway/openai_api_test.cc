// Tests of openai_api.h: strict validation naming the field, the chat template, OpenAI's
// response shapes, and the instance event stream parser across arbitrary piece boundaries.
#include "runtime/gateway/openai_api.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

OpenAiError ErrorOf(std::string_view body, bool chat) {
  auto r = ParseOpenAiRequest(body, chat);
  EXPECT_TRUE(std::holds_alternative<OpenAiError>(r)) << body;
  return std::holds_alternative<OpenAiError>(r) ? std::get<OpenAiError>(r) : OpenAiError{};
}

TEST(OpenAiRequestTest, ParsesCompletionAndChat) {
  auto c = ParseOpenAiRequest(
      R"({"model":"m","prompt":"hi","max_tokens":5,"stop":"x","stream":true,"temperature":0.2})",
      false);
  ASSERT_TRUE(std::holds_alternative<OpenAiRequest>(c));
  const auto& r = std::get<OpenAiRequest>(c);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt, "hi");
  EXPECT_EQ(r.max_tokens, 5);
  EXPECT_THAT(r.stop, ElementsAre("x"));
  EXPECT_TRUE(r.stream);
  auto chat = ParseOpenAiRequest(
      R"({"model":"m","messages":[{"role":"system","content":"be brief"},
          {"role":"user","content":[{"type":"text","text":"hi"}]}]})",
      true);
  ASSERT_TRUE(std::holds_alternative<OpenAiRequest>(chat));
  EXPECT_EQ(std::get<OpenAiRequest>(chat).prompt,
            "<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n");
  EXPECT_EQ(std::get<OpenAiRequest>(chat).max_tokens, kDefaultChatMaxTokens);
}

TEST(OpenAiRequestTest, RejectsMalformedBodiesNamingTheField) {
  EXPECT_THAT(ErrorOf("{not json", false).message, HasSubstr("not valid JSON"));
  EXPECT_EQ(ErrorOf(R"({"prompt":"x"})", false).param, "model");
  EXPECT_EQ(ErrorOf(R"({"model":"m"})", false).param, "prompt");
  EXPECT_EQ(ErrorOf(R"({"model":"m","prompt":3})", false).param, "prompt");
  EXPECT_EQ(ErrorOf(R"({"model":"m","prompt":"x","n":2})", false).param, "n");
  EXPECT_EQ(ErrorOf(R"({"model":"m","prompt":"x","max_tokens":0})", false).param, "max_tokens");
  EXPECT_EQ(ErrorOf(R"({"model":"m","prompt":"x","stream":"yes"})", false).param, "stream");
  EXPECT_EQ(ErrorOf(R"({"model":"m","prompt":"x","stop":["a","b","c","d","e"]})", false).param,
            "stop");
  EXPECT_EQ(ErrorOf(R"({"model":"m","messages":[]})", true).param, "messages");
  EXPECT_EQ(ErrorOf(R"({"model":"m","messages":[{"role":"bot","content":"x"}]})", true).param,
            "messages[0].role");
  EXPECT_EQ(ErrorOf(R"({"model":"m","messages":[{"role":"user"}]})", true).param,
            "messages[0].content");
  const OpenAiError e = ErrorOf(R"({"model":"m","prompt":"x","n":3})", false);
  EXPECT_EQ(e.status, 400);
  const auto body = nlohmann::json::parse(OpenAiErrorResponse(e).body);
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "n");
  EXPECT_TRUE(body["error"]["code"].is_null());
  EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr("n"));
}

TEST(OpenAiShapesTest, ChunksCompletionsAndModels) {
  OpenAiRequest chat;
  chat.chat = true;
  chat.model = "llm";
  const std::string first = ChunkEvent(chat, "chatcmpl-1", 7, "Hi", true, {});
  ASSERT_THAT(first, ::testing::StartsWith("data: "));
  ASSERT_THAT(first, ::testing::EndsWith("\n\n"));
  const auto j = nlohmann::json::parse(first.substr(6));
  EXPECT_EQ(j["object"], "chat.completion.chunk");
  EXPECT_EQ(j["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["delta"]["content"], "Hi");
  EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
  OpenAiRequest text;
  text.model = "llm";
  const auto done = nlohmann::json::parse(CompletionBody(text, "cmpl-2", 7, "abc", "stop", 3, 4));
  EXPECT_EQ(done["object"], "text_completion");
  EXPECT_EQ(done["choices"][0]["text"], "abc");
  EXPECT_EQ(done["usage"]["total_tokens"], 7);
  const auto models = nlohmann::json::parse(ModelListBody({"a", "b"}, 1));
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][1]["id"], "b");
  EXPECT_EQ(models["data"][1]["object"], "model");
}

TEST(SseParserTest, SplitsEventsAcrossRandomPieceBoundaries) {
  const std::string stream =
      ": comment\n\ndata: {\"index\":0,\"text\":\"a\"}\n\ndata: {\"index\":1,\"text\":\"b\"}"
      "\r\n\r\ndata: one\ndata: two\n\ndata: {\"done\":true,\"finish_reason\":\"stop\"}\n\n";
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    SseParser parser;
    std::vector<std::string> events;
    for (size_t at = 0; at < stream.size();) {
      const size_t n = std::min<size_t>(stream.size() - at, 1 + rng() % 9);
      for (auto& e : parser.Feed(std::string_view(stream).substr(at, n))) events.push_back(e);
      at += n;
    }
    ASSERT_EQ(events.size(), 4u) << trial;
    EXPECT_EQ(events[2], "one\ntwo");
    EXPECT_EQ(ParseInstanceEvent(events[1]).text, "b");
    const InstanceEvent done = ParseInstanceEvent(events[3]);
    EXPECT_EQ(done.kind, InstanceEvent::Kind::kDone);
    EXPECT_EQ(done.finish_reason, "stop");
  }
  EXPECT_EQ(ParseInstanceEvent("{oops").kind, InstanceEvent::Kind::kMalformed);
  EXPECT_EQ(ParseInstanceEvent(R"({"error":{"message":"x"}})").kind, InstanceEvent::Kind::kError);
}

}  // namespace
}  // namespace sluice::runtime
