// FunctionServer over real HTTP on 127.0.0.1:0 with fake batch handlers.
#include "runtime/sdk/function_server.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

#include "runtime/sdk/training.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;

json Req(const std::string& id, float x) {
  return {{"id", id},
          {"inputs", {{{"name", "x"}, {"shape", {1}}, {"datatype", "FP32"}, {"data", {x}}}}}};
}

// Echoes each request's id and doubles its input; records the ids of every batch it ran.
struct EchoHandler {
  absl::Mutex mu;
  std::vector<std::vector<std::string>> batches;
  absl::Notification* gate = nullptr;  // when set, the first batch waits on it
  int running = 0, max_running = 0;

  std::vector<InferResult> operator()(std::span<const InferRequest> batch) {
    {
      absl::MutexLock lock(&mu);
      max_running = std::max(max_running, ++running);
    }
    if (gate != nullptr) {
      gate->WaitForNotification();
    }
    std::vector<InferResult> out;
    std::vector<std::string> ids;
    for (const InferRequest& r : batch) {
      ids.push_back(r.id);
      const float x = InputAsFloats(r, "x").value().values.at(0);
      if (x < 0) {
        out.push_back(InferResult::Error("negative input"));
      } else {
        out.push_back(InferResult::Ok(InferResponse("m", r.id, {Fp32Output("y", {1}, {2 * x})})));
      }
    }
    absl::MutexLock lock(&mu);
    --running;
    gate = nullptr;
    batches.push_back(ids);
    return out;
  }
};

class FunctionServerTest : public ::testing::Test {
 protected:
  void StartServer(bool ready = true) {
    FunctionOptions o;
    o.name = "m";
    o.sample_request = Req("sample", 1.5f);
    o.memory_bytes = [] {
      return int64_t{4096};
    };
    auto s = FunctionServer::Start(o, [this](std::span<const InferRequest> b) { return h_(b); });
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    server_->SetReady(ready);
    base_ = absl::StrCat("http://127.0.0.1:", server_->port());
  }
  http::Response Post(const std::string& path, const json& body) {
    absl::StatusOr<http::Response> r = http::Post(base_ + path, body.dump());
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : http::Response{};
  }
  int GetStatus(const std::string& path) {
    absl::StatusOr<http::Response> r = http::Get(base_ + path);
    return r.ok() ? r->status : -1;
  }
  json Stats() { return json::parse(http::Get(base_ + "/sluice/v1/stats")->body); }

  EchoHandler h_;
  std::unique_ptr<FunctionServer> server_;
  std::string base_;
};

TEST_F(FunctionServerTest, ReadyGatesRequestsButLivenessAnswers) {
  StartServer(/*ready=*/false);
  EXPECT_EQ(GetStatus("/v2/health/live"), 200);
  EXPECT_EQ(GetStatus("/v2/health/ready"), 503);
  EXPECT_EQ(Post("/sluice/v1/batch", {{"requests", {Req("a", 1)}}}).status, 503);
  EXPECT_EQ(Post("/v2/models/m/infer", Req("a", 1)).status, 503);
  server_->SetReady(true);
  EXPECT_EQ(GetStatus("/v2/health/ready"), 200);
  EXPECT_EQ(GetStatus("/v2/models/m/ready"), 200);
  EXPECT_EQ(GetStatus("/v2/models/other/ready"), 404);
  EXPECT_EQ(Post("/sluice/v1/batch", {{"requests", {Req("a", 1)}}}).status, 200);
}

TEST_F(FunctionServerTest, BatchAnswersInOrderWithErrorsInPlace) {
  StartServer();
  json bad = {{"inputs", "nope"}};
  http::Response r =
      Post("/sluice/v1/batch", {{"requests", {Req("a", 1), bad, Req("c", -1), Req("d", 4)}}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  ASSERT_EQ(j["responses"].size(), 4u);
  EXPECT_EQ(j["responses"][0]["id"], "a");
  EXPECT_EQ(j["responses"][0]["outputs"][0]["data"][0], 2.0);
  EXPECT_NE(j["responses"][1]["error"].get<std::string>().find("requests[1]: inputs"),
            std::string::npos);
  EXPECT_EQ(j["responses"][1]["code"], 400);
  EXPECT_EQ(j["responses"][2]["error"], "negative input");
  EXPECT_EQ(j["responses"][2]["code"], 400);
  EXPECT_EQ(j["responses"][3]["outputs"][0]["data"][0], 8.0);
  EXPECT_TRUE(j["exec_ms"].is_number());
  ASSERT_EQ(h_.batches.size(), 1u);  // the invalid request never reached the handler
  EXPECT_EQ(h_.batches[0], (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(Post("/sluice/v1/batch", json{{"x", 1}}).status, 400);
  json s = Stats();
  EXPECT_EQ(s["served"], 4);
  EXPECT_EQ(s["batches"], 1);
  EXPECT_EQ(s["in_flight"], 0);
}

TEST_F(FunctionServerTest, BatchesRunOneAtATimeInArrivalOrderWhileHealthAnswers) {
  StartServer();
  absl::Notification gate;
  h_.gate = &gate;
  std::vector<std::thread> clients;
  std::vector<http::Response> answers(3);
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([this, i, &answers] {
      answers[i] = Post("/sluice/v1/batch", {{"requests", {Req(absl::StrCat("b", i), 1)}}});
    });
    // The next batch is sent only once this one is counted in flight: arrival order is i.
    while (Stats()["in_flight"] != i + 1) {
      std::this_thread::yield();
    }
  }
  EXPECT_EQ(GetStatus("/v2/health/ready"), 200);  // the loop answers while the handler blocks
  gate.Notify();
  for (std::thread& t : clients) {
    t.join();
  }
  for (const http::Response& a : answers) {
    EXPECT_EQ(a.status, 200) << a.body;
  }
  ASSERT_EQ(h_.batches.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(h_.batches[i][0], absl::StrCat("b", i));
  }
  EXPECT_EQ(h_.max_running, 1);
}

TEST_F(FunctionServerTest, AHandlerOnTheLoopThreadAnswersTheSame) {
  FunctionOptions o;
  o.name = "m";
  o.handler_on_loop = true;
  auto s = FunctionServer::Start(o, [this](std::span<const InferRequest> b) { return h_(b); });
  ASSERT_TRUE(s.ok()) << s.status();
  (*s)->SetReady(true);
  base_ = absl::StrCat("http://127.0.0.1:", (*s)->port());
  json j = json::parse(Post("/sluice/v1/batch", {{"requests", {Req("a", 1), Req("b", 2)}}}).body);
  EXPECT_EQ(j["responses"][1]["outputs"][0]["data"][0], 4.0);
  EXPECT_EQ(Post("/v2/models/m/infer", Req("c", 3)).status, 200);
  EXPECT_EQ(Stats()["served"], 3);
  (*s)->Drain();
  ASSERT_EQ(h_.batches.size(), 2u);
  EXPECT_EQ(h_.batches[0], (std::vector<std::string>{"a", "b"}));
}

TEST_F(FunctionServerTest, InferEndpointRunsOneRequest) {
  StartServer();
  http::Response r = Post("/v2/models/m/infer", Req("q", 3));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["outputs"][0]["data"][0], 6.0);
  EXPECT_EQ(Post("/v2/models/other/infer", Req("q", 3)).status, 404);
  EXPECT_EQ(Post("/v2/models/m/infer", json{{"inputs", 1}}).status, 400);
  r = Post("/v2/models/m/infer", Req("q", -3));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("negative input"), std::string::npos);
}

TEST_F(FunctionServerTest, HandlerReturningTheWrongCountFailsEveryRequest) {
  FunctionOptions o;
  o.name = "m";
  auto s = FunctionServer::Start(
      o, [](std::span<const InferRequest>) { return std::vector<InferResult>{}; });
  ASSERT_TRUE(s.ok());
  (*s)->SetReady(true);
  base_ = absl::StrCat("http://127.0.0.1:", (*s)->port());
  json j = json::parse(Post("/sluice/v1/batch", {{"requests", {Req("a", 1)}}}).body);
  EXPECT_NE(j["responses"][0]["error"].get<std::string>().find("0 results for 1"),
            std::string::npos);
  EXPECT_EQ(Post("/sluice/v1/trial", {{"batch", 1}}).status, 409);  // no sample request
}

TEST_F(FunctionServerTest, TrialRunsIterationsOfBatchCopiesOfTheSample) {
  StartServer();
  http::Response r = Post("/sluice/v1/trial", {{"batch", 4}, {"iterations", 5}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  ASSERT_EQ(h_.batches.size(), 5u);
  for (const auto& b : h_.batches) {
    EXPECT_EQ(b.size(), 4u);
  }
  EXPECT_EQ(h_.batches[0][3], "trial-3");
  EXPECT_EQ(j["memory_bytes"], 4096);
  const double latency_ms = j["latency_ms"].get<double>();
  if (latency_ms > 0) {
    EXPECT_NEAR(j["throughput"].get<double>(), 4 / (latency_ms / 1000), 1e-6 * 4000 / latency_ms);
  }
  EXPECT_EQ(Stats()["batches"], 0);  // trials are not requests
  EXPECT_EQ(Post("/sluice/v1/trial", {{"batch", 0}}).status, 400);
}

TEST_F(FunctionServerTest, ABusyPortIsAnErrorNotACrash) {
  StartServer();
  FunctionOptions o;
  o.port = server_->port();
  auto second = FunctionServer::Start(o, [](std::span<const InferRequest> b) {
    return std::vector<InferResult>(b.size(), InferResult::Error("unused"));
  });
  EXPECT_FALSE(second.ok());
  TrainingOptions t;
  t.port = server_->port();
  auto training = TrainingLoop::Start(t);
  EXPECT_FALSE(training.ok());
}

TEST_F(FunctionServerTest, DrainFinishesTheBatchInFlightAndRefusesNewOnes) {
  StartServer();
  absl::Notification gate;
  h_.gate = &gate;
  http::Response in_flight;
  std::thread client([&] { in_flight = Post("/sluice/v1/batch", {{"requests", {Req("a", 1)}}}); });
  while (Stats()["in_flight"] != 1) {
    std::this_thread::yield();
  }
  std::thread drain([&] { server_->Drain(); });
  while (!Stats()["draining"].get<bool>()) {
    std::this_thread::yield();
  }
  EXPECT_EQ(GetStatus("/v2/health/ready"), 503);
  EXPECT_EQ(Post("/sluice/v1/batch", {{"requests", {Req("b", 1)}}}).status, 503);
  gate.Notify();
  drain.join();
  client.join();
  EXPECT_EQ(in_flight.status, 200) << in_flight.body;
  EXPECT_EQ(json::parse(in_flight.body)["responses"][0]["id"], "a");
  EXPECT_EQ(server_->stats().served, 1);
  EXPECT_FALSE(http::Get(base_ + "/v2/health/live", absl::Seconds(2)).ok());  // closed
}

}  // namespace
}  // namespace sluice::runtime
