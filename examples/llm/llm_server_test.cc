// The LLM instance API over real HTTP on 127.0.0.1 (port 0): generate timing within tolerance
// of the perf model, the KV refusal as a 400, streaming events, the prefill->decode role switch
// and the P->D handoff with a KV push, 404 for a decode without KV, 502 for a dead decode_url.
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "llm_server.h"
#include "nlohmann/json.hpp"

namespace sluice::examples {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

class LlmServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = http::EventLoop::Create();
    ASSERT_TRUE(loop.ok());
    loop_ = *std::move(loop);
  }
  void TearDown() override {
    servers_.clear();
    loop_->Stop();
  }
  std::string Start(LlmRole role, double time_scale = 0.05) {
    LlmServerOptions o;
    o.role = role;
    o.time_scale = time_scale;
    auto s = LlmServer::Start(*loop_, o);
    EXPECT_TRUE(s.ok()) << s.status();
    std::string url = absl::StrCat("http://127.0.0.1:", (*s)->port());
    servers_.push_back(*std::move(s));
    return url;
  }
  static http::Response Call(const std::string& url, const Json& body) {
    auto r = http::Post(url, body.dump(), "application/json");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : http::Response{};
  }
  std::unique_ptr<http::EventLoop> loop_;
  std::vector<std::unique_ptr<LlmServer>> servers_;
};

std::string Words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    absl::StrAppend(&s, "w", i, " ");
  return s;
}

// Real time: the answer cannot come before prefill + 9 decode steps of the model (timers never
// fire early); the upper bound leaves room for a loaded 2-core box.
TEST_F(LlmServerTest, GenerateTakesThePerfModelsTime) {
  std::string url = Start(LlmRole::kColocated, 1.0);
  auto m = core::BuiltinLlmModel("llama2-7b");
  ASSERT_TRUE(m.ok());
  absl::Duration want = (*m)->PrefillTime(1000, 1);
  for (int i = 1; i < 10; ++i)
    want += (*m)->DecodeTime(1, 1000 + i);
  absl::Time t0 = absl::Now();
  http::Response r = Call(url + "/sluice/v1/generate",
                          {{"prompt", Words(1000)}, {"max_tokens", 10}});
  absl::Duration took = absl::Now() - t0;
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_EQ(j["prompt_tokens"], 1000);
  EXPECT_EQ(j["completion_tokens"], 10);
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_GE(took, want);
  EXPECT_LT(took, want * 1.5 + absl::Milliseconds(100)) << "model " << want;
}

TEST_F(LlmServerTest, PromptTooLongForTheKvCacheIsA400) {
  std::string url = Start(LlmRole::kColocated);
  http::Response r = Call(url + "/sluice/v1/generate",
                          {{"prompt", Words(4090)}, {"max_tokens", 100}});
  EXPECT_EQ(r.status, 400);
  Json j = Json::parse(r.body);
  EXPECT_EQ(j["error"]["code"], 400);
  EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr("prompt: 4090 prompt tokens"));
  http::Response bad = Call(url + "/sluice/v1/generate", {{"max_tokens", 3}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("prompt"));
}

TEST_F(LlmServerTest, StreamingSendsOneEventPerTokenThenDone) {
  std::string url = Start(LlmRole::kColocated);
  http::Response r = Call(url + "/sluice/v1/generate",
                          {{"prompt", "hi there"}, {"max_tokens", 3}, {"stream", true}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type.substr(0, 17), "text/event-stream");
  std::vector<std::string> events = absl::StrSplit(r.body, "\n\n", absl::SkipEmpty());
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(Json::parse(events[1].substr(6))["index"], 1);
  Json done = Json::parse(events[3].substr(6));
  EXPECT_EQ(done["done"], true);
  EXPECT_EQ(done["completion_tokens"], 3);
  EXPECT_EQ(done["prompt_tokens"], 2);
}

// Events leave as tokens are produced: the first arrives long before the last (19 decode steps
// of >= 12 ms each separate them under the model).
TEST_F(LlmServerTest, StreamedTokensArriveAsTheyAreProduced) {
  std::string url = Start(LlmRole::kColocated, 1.0);
  http::Client client(*loop_);
  http::Request req;
  req.method = "POST";
  req.target = "/sluice/v1/generate";
  req.headers = {{"content-type", "application/json"}};
  req.body = Json{{"prompt", "tell me"}, {"max_tokens", 20}, {"stream", true}}.dump();
  struct Seen {
    absl::Time first = absl::InfinitePast(), end = absl::InfinitePast();
    std::string body;
    absl::Status status;
  };
  auto seen = std::make_shared<Seen>();
  absl::Notification done;
  auto endpoint = http::Endpoint::Parse(url);
  ASSERT_TRUE(endpoint.ok());
  client.Stream(*endpoint, std::move(req), absl::Seconds(10),
                {nullptr,
                 [seen](std::string_view data) {
                   if (seen->first == absl::InfinitePast())
                     seen->first = absl::Now();
                   seen->body.append(data);
                 },
                 [seen, &done](absl::Status s) {
                   seen->end = absl::Now();
                   seen->status = s;
                   done.Notify();
                 }});
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  ASSERT_TRUE(seen->status.ok()) << seen->status;
  EXPECT_LT(seen->first + absl::Milliseconds(100), seen->end);
  EXPECT_THAT(seen->body, HasSubstr("\"done\":true"));
  EXPECT_THAT(seen->body, HasSubstr("\"index\":19"));
}

TEST_F(LlmServerTest, PrefillHandsKvToDecodeAndTheTextMatchesColocated) {
  std::string colocated = Start(LlmRole::kColocated);
  std::string prefill = Start(LlmRole::kPrefill);
  std::string decode = Start(LlmRole::kDecode);
  const std::string prompt = Words(300);
  Json whole = Json::parse(
      Call(colocated + "/sluice/v1/generate", {{"prompt", prompt}, {"max_tokens", 6}}).body);
  http::Response p = Call(prefill + "/sluice/v1/prefill",
                          {{"request_id", "r1"}, {"prompt", prompt}, {"decode_url", decode}});
  ASSERT_EQ(p.status, 200) << p.body;
  Json pj = Json::parse(p.body);
  auto m = core::BuiltinLlmModel("llama2-7b");
  EXPECT_EQ(pj["kv_bytes"], 300 * (*m)->spec().kv_bytes_per_token.count() / 256);
  http::Response d = Call(decode + "/sluice/v1/decode", {{"request_id", "r1"}, {"max_tokens", 5}});
  ASSERT_EQ(d.status, 200) << d.body;
  Json dj = Json::parse(d.body);
  EXPECT_EQ(pj["text"].get<std::string>() + dj["text"].get<std::string>(), whole["text"]);
  EXPECT_EQ(dj["completion_tokens"], 5);  // its own: the 5 after the prefill's first
  // The KV was consumed: a second decode of r1 is a 404 naming it.
  http::Response again = Call(decode + "/sluice/v1/decode", {{"request_id", "r1"}});
  EXPECT_EQ(again.status, 404);
  EXPECT_THAT(again.body, HasSubstr("no KV for 'r1'"));
}

TEST_F(LlmServerTest, PrefillInstanceSwitchesToDecode) {
  std::string p = Start(LlmRole::kPrefill);
  EXPECT_EQ(Call(p + "/sluice/v1/generate", {{"prompt", "x"}}).status, 409);
  EXPECT_EQ(Call(p + "/sluice/v1/decode", {{"request_id", "x"}}).status, 409);
  http::Response r = Call(p + "/sluice/v1/role", {{"role", "decode"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json::parse(r.body)["previous"], "prefill");
  EXPECT_EQ(Call(p + "/sluice/v1/decode", {{"request_id", "x"}}).status, 404);  // now a decoder
  EXPECT_EQ(Call(p + "/sluice/v1/role", {{"role", "chef"}}).status, 400);
}

TEST_F(LlmServerTest, DeadDecodeUrlIsA502NamingIt) {
  std::string p = Start(LlmRole::kPrefill);
  http::Response r = Call(p + "/sluice/v1/prefill", {{"request_id", "r"},
                                                     {"prompt", "a b c"},
                                                     {"decode_url", "http://127.0.0.1:1"}});
  EXPECT_EQ(r.status, 502);
  EXPECT_THAT(r.body, HasSubstr("decode_url"));
}

// The controller profiles an LLM function like any other: a trial of batch b is one decode step of
// b sequences at the default context, from the perf model; bad bodies are a 400 naming the field.
TEST_F(LlmServerTest, TrialReportsTheModelsDecodeStep) {
  std::string url = Start(LlmRole::kColocated, 1.0);
  auto m = core::BuiltinLlmModel("llama2-7b");
  ASSERT_TRUE(m.ok());
  http::Response r = Call(url + "/sluice/v1/trial", {{"batch", 4}, {"iterations", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  const double want = absl::ToDoubleMilliseconds((*m)->DecodeTime(4, 4 * 1024));
  EXPECT_NEAR(j["latency_ms"].get<double>(), want, 1e-6);
  EXPECT_NEAR(j["throughput"].get<double>(), 4 / (want / 1000), 1e-3);
  http::Response bad = Call(url + "/sluice/v1/trial", {{"batch", 0}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("batch"));
}

// The gateway's cancel when a streaming client leaves: the request stops (its answer is cut,
// its KV freed); an unknown id is a 404 naming the field. Stats count what each endpoint served.
TEST_F(LlmServerTest, CancelStopsARunningRequestAndStatsCountIt) {
  std::string url = Start(LlmRole::kColocated, 1.0);
  absl::Notification answered;
  http::Response slow;
  std::thread t([&] {
    // ~1,000 decode steps of llama2-7b: many seconds unless cancelled.
    auto r = http::Post(url + "/sluice/v1/generate",
                        Json{{"request_id", "r1"}, {"prompt", Words(10)}, {"max_tokens", 1000}}
                            .dump(),
                        "application/json", absl::Seconds(60));
    if (r.ok())
      slow = *r;
    answered.Notify();
  });
  Json stats = Json::object();
  for (int i = 0; i < 500 && stats.value("running", 0) == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    stats = Json::parse(http::Get(url + "/sluice/v1/stats")->body);
  }
  EXPECT_EQ(stats["running"], 1) << stats.dump();
  EXPECT_GT(stats["kv_used_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(stats["generate_requests"], 1);
  http::Response c = Call(url + "/sluice/v1/cancel/r1", Json::object());
  EXPECT_EQ(c.status, 200) << c.body;
  EXPECT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(20)));
  t.join();  // (joined on every path: no ASSERT above)
  EXPECT_NE(slow.status, 200);  // cut, not completed
  stats = Json::parse(http::Get(url + "/sluice/v1/stats")->body);
  EXPECT_EQ(stats["running"], 0);
  EXPECT_EQ(stats["kv_used_tokens"], 0);
  EXPECT_EQ(stats["cancelled_requests"], 1);
  http::Response again = Call(url + "/sluice/v1/cancel/r1", Json::object());
  EXPECT_EQ(again.status, 404);
  EXPECT_THAT(again.body, HasSubstr("request_id"));
}

}  // namespace
}  // namespace sluice::examples
