// The gateway's OpenAI API end to end against fake LLM instances (real HTTP): model list,
// non-streaming and streaming completions and chat, stop sequences, OpenAI-shaped errors (unknown
// model, too-long prompt, malformed body, full queue), retry before the first token, an error
// event after it, the TTFT/TPOT metrics, and the cancel sent to the generating instance when a
// streaming client leaves.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/gateway/openai_api.h"
#include "runtime/gateway/route_table.h"
#include "runtime/gateway/testing/fake_llm_instance.h"
#include "runtime/gateway/testing/gateway_harness.h"

namespace sluice::runtime::testing {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

json LlmRoute(const std::string& name, const std::vector<const FakeLlmInstance*>& instances,
              int queue_max = 256) {
  json insts = json::array();
  for (const FakeLlmInstance* i : instances) {
    insts.push_back({{"id", i->id()}, {"url", i->url()}, {"capacity_rps", 10}, {"state", "ready"}});
  }
  json r = RouteJson(name, 8, 0, std::move(insts), queue_max);
  r["kind"] = "llm";
  return r;
}

absl::StatusOr<http::Response> PostJson(const GatewayHarness& h, const std::string& path,
                                        const std::string& body) {
  http::Request req;
  req.method = "POST";
  req.target = path;
  req.headers.emplace_back("content-type", "application/json");
  req.body = body;
  return http::Fetch(h.endpoint(), std::move(req), absl::Seconds(20));
}

// The data payloads of a server-sent event body.
std::vector<std::string> Events(const std::string& body) {
  SseParser parser;
  return parser.Feed(body);
}

class OpenAiGatewayTest : public ::testing::Test {
 protected:
  GatewayHarness h;
  FakeLlmInstance a{1};
  FakeLlmInstance b{2};
};

TEST_F(OpenAiGatewayTest, ModelsListsOnlyLlmFunctions) {
  h.SetRoutes(json::array({LlmRoute("llm", {&a}), RouteJson("cls", 1, 0, json::array())}));
  auto r = h.Get("/v1/models");
  ASSERT_TRUE(r.ok()) << r.status();
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "llm");
}

TEST_F(OpenAiGatewayTest, NonStreamingCompletionHasTextAndUsage) {
  h.SetRoutes(json::array({LlmRoute("llm", {&a})}));
  auto r = PostJson(h, "/v1/completions", R"({"model":"llm","prompt":"hello","max_tokens":3})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "t0 t1 t2 ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_EQ(a.prompts().back(), "hello");
  EXPECT_GE(h.Metric(R"(sluice_gateway_ttft_seconds_count{function="llm"})"), 1);
  EXPECT_GE(h.Metric(R"(sluice_gateway_tpot_seconds_count{function="llm"})"), 1);
}

TEST_F(OpenAiGatewayTest, StreamingCompletionAndChatEndWithDone) {
  h.SetRoutes(json::array({LlmRoute("llm", {&a})}));
  auto r = PostJson(h, "/v1/completions",
                    R"({"model":"llm","prompt":"x","max_tokens":4,"stream":true,
                        "stream_options":{"include_usage":true}})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->content_type, "text/event-stream");
  std::vector<std::string> events = Events(r->body);
  ASSERT_GE(events.size(), 3u) << r->body;
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    text += json::parse(events[i])["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "t0 t1 t2 t3 ");
  EXPECT_EQ(json::parse(events[events.size() - 3])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(json::parse(events[events.size() - 2])["usage"]["completion_tokens"], 4);

  auto c = PostJson(h, "/v1/chat/completions",
                    R"({"model":"llm","messages":[{"role":"user","content":"hi"}],
                        "max_tokens":10,"stop":["t2"],"stream":true})");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->status, 200) << c->body;
  events = Events(c->body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[0])["choices"][0]["delta"]["role"], "assistant");
  std::string content;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    content += json::parse(events[i])["choices"][0]["delta"].value("content", "");
  }
  EXPECT_EQ(content, "t0 t1 ");
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(a.prompts().back(), "<|user|>\nhi\n<|assistant|>\n");
}

TEST_F(OpenAiGatewayTest, ErrorsComeInOpenAiShape) {
  h.SetRoutes(json::array({LlmRoute("llm", {&a}), RouteJson("cls", 1, 0, json::array())}));
  auto unknown = PostJson(h, "/v1/completions", R"({"model":"nope","prompt":"x"})");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(json::parse(unknown->body)["error"]["code"], "model_not_found");
  auto not_llm = PostJson(h, "/v1/completions", R"({"model":"cls","prompt":"x"})");
  ASSERT_TRUE(not_llm.ok());
  EXPECT_EQ(not_llm->status, 404);
  auto bad = PostJson(h, "/v1/chat/completions", R"({"model":"llm"})");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "messages");
  a.set_options({.kv_capacity_tokens = 8});
  for (bool stream : {false, true}) {
    auto longp = PostJson(h, "/v1/completions",
                          json({{"model", "llm"}, {"prompt", std::string(50, 'p')},
                                {"stream", stream}}).dump());
    ASSERT_TRUE(longp.ok());
    EXPECT_EQ(longp->status, 400) << longp->body;
    const json e = json::parse(longp->body)["error"];
    EXPECT_EQ(e["code"], "context_length_exceeded");
    EXPECT_EQ(e["param"], "prompt");
    EXPECT_THAT(e["message"].get<std::string>(), HasSubstr("KV cache"));
  }
}

TEST_F(OpenAiGatewayTest, FailureBeforeTheFirstTokenIsRetriedAfterItIsAnErrorEvent) {
  a.set_options({.fail_500 = true});
  h.SetRoutes(json::array({LlmRoute("llm", {&a, &b})}));
  for (int i = 0; i < 4; ++i) {
    auto r = PostJson(h, "/v1/completions", R"({"model":"llm","prompt":"x","max_tokens":2})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 200) << r->body;
  }
  EXPECT_GE(b.requests_received(), 4);
  a.set_options({.fail_after_tokens = 2});
  b.set_options({.fail_after_tokens = 2});
  auto r = PostJson(h, "/v1/completions",
                    R"({"model":"llm","prompt":"x","max_tokens":5,"stream":true})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  const std::vector<std::string> events = Events(r->body);
  ASSERT_FALSE(events.empty()) << r->body;
  const json last = json::parse(events.back());
  EXPECT_EQ(last["error"]["type"], "server_error") << r->body;
  EXPECT_THAT(last["error"]["message"].get<std::string>(), HasSubstr("mid-stream"));
}

TEST_F(OpenAiGatewayTest, NoInstanceHoldsAndWakesLikeOtherFunctions) {
  json route = LlmRoute("llm", {});
  h.SetRoutes(json::array({route}));
  auto pending = std::async(std::launch::async, [&] {
    return PostJson(h, "/v1/completions", R"({"model":"llm","prompt":"x","max_tokens":1})");
  });
  ASSERT_TRUE(WaitFor([&] { return !h.controller.wakes().empty(); }));
  EXPECT_EQ(h.controller.wakes().front(), "llm");
  h.SetRoutes(json::array({LlmRoute("llm", {&a})}));
  auto r = pending.get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(OpenAiGatewayTest, DisaggregatedPrefillThenDecodeStreamsEveryToken) {
  json route = LlmRoute("llm", {&a, &b});
  route["instances"][0]["role"] = "prefill";
  route["instances"][1]["role"] = "decode";
  h.SetRoutes(json::array({route}));
  auto r = PostJson(h, "/v1/completions",
                    R"({"model":"llm","prompt":"abc","max_tokens":4,"stream":true,
                        "stream_options":{"include_usage":true}})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  const std::vector<std::string> events = Events(r->body);
  ASSERT_GE(events.size(), 4u) << r->body;
  std::string text;
  for (size_t i = 0; i + 2 < events.size(); ++i)
    text += json::parse(events[i])["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, "t0 t1 t2 t3 ");  // t0 from the prefill instance, the rest from decode
  const json usage = json::parse(events[events.size() - 2])["usage"];
  EXPECT_EQ(usage["completion_tokens"], 4);
  EXPECT_EQ(usage["prompt_tokens"], 3);
  ASSERT_EQ(a.kv_pushes().size(), 1u);
  EXPECT_EQ(a.kv_pushes()[0], "http://" + b.url());
  EXPECT_EQ(b.prompts().size(), 0u);  // the decode instance never saw the prompt
  // The decode instance is never dispatched to directly.
  for (int i = 0; i < 3; ++i) {
    auto n = PostJson(h, "/v1/completions", R"({"model":"llm","prompt":"x","max_tokens":1})");
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(n->status, 200) << n->body;
    EXPECT_EQ(json::parse(n->body)["choices"][0]["text"], "t0 ");
  }
  EXPECT_EQ(a.kv_pushes().size(), 4u);
}

// Sends a streaming completion over a raw socket, reads until `until` has arrived, then closes
// the connection (a client that leaves mid-stream). False when the stream never showed it.
bool StreamThenLeave(const GatewayHarness& h, const std::string& body, const std::string& until) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(h.endpoint().port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return false;
  const std::string req =
      absl::StrCat("POST /v1/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json"
                   "\r\nContent-Length: ", body.size(), "\r\n\r\n", body);
  bool seen = write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size());
  std::string got;
  char buf[4096];
  while (seen && got.find(until) == std::string::npos) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) seen = false;
    else got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return seen;
}

TEST_F(OpenAiGatewayTest, StreamingClientThatLeavesCancelsTheGeneration) {
  FakeLlmOptions slow;
  slow.token_delay = absl::Milliseconds(20);
  a.set_options(slow);
  h.SetRoutes(json::array({LlmRoute("llm", {&a})}));
  ASSERT_TRUE(StreamThenLeave(h, R"({"model":"llm","prompt":"x","max_tokens":500,"stream":true})",
                              "t2 "));
  ASSERT_TRUE(WaitFor([&] { return !a.cancels().empty(); })) << "no cancel reached the instance";
  EXPECT_THAT(a.cancels()[0], ::testing::StartsWith("cmpl-"));  // the instance's request_id
  const int written = a.tokens_written();
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(a.tokens_written(), written);  // it stopped generating
  EXPECT_LT(written, 100);
  // Not counted as an instance failure: the next request is served by the same instance.
  auto r = PostJson(h, "/v1/completions", R"({"model":"llm","prompt":"y","max_tokens":2})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(a.cancels().size(), 1u);  // a client that stays is never cancelled
}

TEST_F(OpenAiGatewayTest, StreamingClientThatLeavesCancelsTheDecodeInstance) {
  FakeLlmOptions slow;
  slow.token_delay = absl::Milliseconds(20);
  b.set_options(slow);
  json route = LlmRoute("llm", {&a, &b});
  route["instances"][0]["role"] = "prefill";
  route["instances"][1]["role"] = "decode";
  h.SetRoutes(json::array({route}));
  ASSERT_TRUE(StreamThenLeave(h, R"({"model":"llm","prompt":"x","max_tokens":500,"stream":true})",
                              "t3 "));
  ASSERT_TRUE(WaitFor([&] { return !b.cancels().empty(); })) << "no cancel reached decode";
  EXPECT_TRUE(a.cancels().empty());  // the prefill instance had finished its part
}

TEST(RouteTableTest, InstanceRoleIsStrict) {
  using ::sluice::runtime::ParseRouteTable;
  auto bad = ParseRouteTable(
      R"({"version":1,"functions":[{"name":"f","state":"ready","instances":[
          {"id":1,"url":"127.0.0.1:1","state":"ready","role":"both"}]}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("functions[0].instances[0].role"));
  auto good = ParseRouteTable(
      R"({"version":1,"functions":[{"name":"f","state":"ready","instances":[
          {"id":1,"url":"127.0.0.1:1","state":"ready","role":"decode"}]}]})");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->functions[0].instances[0].role, "decode");
}

}  // namespace
}  // namespace sluice::runtime::testing
