// The parameter store's agent API over real HTTP: two "agents" (AgentParams behind a Server
// each), load from disk, list, forward to the other agent's receive port, evict, and the bad
// input cases (unknown model, missing path, bad chain, pinned model, unknown instance params).
#include "runtime/agent/agent_params.h"

#include <unistd.h>

#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

using Json = nlohmann::json;

struct ApiAgent {
  std::unique_ptr<http::EventLoop> loop;
  std::unique_ptr<AgentParams> params;
  std::unique_ptr<http::Server> server;
  explicit ApiAgent(const std::string& tag) {
    AgentParamsConfig c;
    c.capacity_bytes = 64 << 20;
    c.socket_path = "/tmp/sluice-agent-params-" + tag + std::to_string(getpid()) + ".sock";
    params = std::move(AgentParams::Start(c)).value();
    loop = std::move(http::EventLoop::Create()).value();
    http::Router r;
    params->AddRoutes(r);
    server = std::move(http::Server::Start(*loop, {}, std::move(r))).value();
  }
  ~ApiAgent() {
    server->Stop();
    loop->Stop();
    params.reset();
  }
  http::Response Call(const std::string& method, const std::string& path,
                      const std::string& body = "") {
    http::Request req;
    req.method = method;
    req.target = path;
    req.body = body;
    absl::StatusOr<http::Response> r =
        http::Fetch({"127.0.0.1", server->port()}, std::move(req), absl::Seconds(30));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : http::Response{599, "", {}, ""};
  }
};

TEST(AgentParamsTest, LoadListForwardEvict) {
  const std::string path = "/tmp/sluice-agent-params-model-" + std::to_string(getpid());
  std::ofstream(path) << std::string(3 << 20, 'w');
  ApiAgent a("a"), b("b");
  http::Response r = a.Call("PUT", "/agent/v1/params/llama", Json{{"path", path}}.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Json::parse(r.body)["bytes"], 3 << 20);
  r = a.Call("GET", "/agent/v1/params");
  Json list = Json::parse(r.body);
  ASSERT_EQ(list["models"].size(), 1u);
  EXPECT_EQ(list["models"][0]["model"], "llama");
  EXPECT_EQ(list["models"][0]["pinned"], false);
  const std::string to = b.params->receive_address();
  r = a.Call("POST", "/agent/v1/params/llama/forward", Json{{"chain", {to}}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json::parse(r.body)["completed"], Json({to}));
  EXPECT_TRUE(b.params->store().Has("llama"));
  auto env = AgentParams::InstanceEnv(b.params.get(), "llama");
  ASSERT_TRUE(env.ok());
  EXPECT_EQ((*env)[1], (std::pair<std::string, std::string>{"SLUICE_PARAMS_MODEL", "llama"}));
  {
    auto pin = b.params->store().Acquire("llama");
    EXPECT_EQ(b.Call("DELETE", "/agent/v1/params/llama").status, 409);
  }
  EXPECT_EQ(b.Call("DELETE", "/agent/v1/params/llama").status, 200);
  EXPECT_FALSE(b.params->store().Has("llama"));
  unlink(path.c_str());
}

TEST(AgentParamsTest, BadInputGetsClearErrors) {
  ApiAgent a("c");
  http::Response r = a.Call("PUT", "/agent/v1/params/m", "{}");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("path"), std::string::npos);
  r = a.Call("PUT", "/agent/v1/params/m", Json{{"path", "/nonexistent"}}.dump());
  EXPECT_EQ(r.status, 400);
  r = a.Call("PUT", "/agent/v1/params/m", "not json");
  EXPECT_EQ(r.status, 400);
  r = a.Call("POST", "/agent/v1/params/unknown/forward",
             Json{{"chain", {"127.0.0.1:9"}}}.dump());
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(a.Call("DELETE", "/agent/v1/params/unknown").status, 404);
  absl::Status s = AgentParams::InstanceEnv(a.params.get(), "unknown").status();
  EXPECT_NE(s.message().find("params"), std::string::npos);
  EXPECT_TRUE(absl::IsInvalidArgument(AgentParams::InstanceEnv(nullptr, "m").status()));
}

}  // namespace
}  // namespace sluice::runtime
