// Tests of runtime/http: router, server + Fetch, keep-alive pooling, deferred and dropped
// Responders, limits, timeouts, refusals, pipelining order, concurrency and EventLoop timers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/http/http.h"

namespace sluice::runtime::http {
namespace {

using ::testing::HasSubstr;

// Dispatches straight through a Router and returns what the handler answered.
Response Route(const Router& router, Request req) {
  Response out;
  out.status = -1;
  router.Dispatch(req, Responder([&out](Response r) { out = std::move(r); }));
  return out;
}

Request MakeRequest(const std::string& method, const std::string& path) {
  Request r;
  r.method = method;
  r.target = path;
  r.path = path;
  return r;
}

TEST(RouterTest, MatchesLiteralsAndCaptures) {
  Router router;
  router.Handle("GET", "/v2/health/live", [](Request&, Responder r) { r(JsonResponse(200, "live")); });
  router.Handle("POST", "/v2/models/{name}/infer", [](Request& req, Responder r) {
    r(JsonResponse(200, "infer " + req.param("name")));
  });
  router.Handle("GET", "/v2/models/{name}/versions/{v}", [](Request& req, Responder r) {
    r(JsonResponse(200, req.param("name") + "@" + req.param("v")));
  });
  EXPECT_EQ(Route(router, MakeRequest("GET", "/v2/health/live")).body, "live");
  EXPECT_EQ(Route(router, MakeRequest("POST", "/v2/models/resnet/infer")).body, "infer resnet");
  EXPECT_EQ(Route(router, MakeRequest("GET", "/v2/models/a/versions/3")).body, "a@3");
  EXPECT_EQ(Route(router, MakeRequest("POST", "/v2/models//infer")).status, 404);
  EXPECT_EQ(Route(router, MakeRequest("POST", "/v2/models/a/b/infer")).status, 404);
}

TEST(RouterTest, UnknownPathIs404AndOtherMethodIs405WithAllow) {
  Router router;
  router.Handle("GET", "/x/{id}", [](Request&, Responder r) { r(JsonResponse(200, "")); });
  router.Handle("DELETE", "/x/{id}", [](Request&, Responder r) { r(JsonResponse(200, "")); });
  const Response missing = Route(router, MakeRequest("GET", "/y"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_THAT(missing.body, HasSubstr("\"code\":404"));
  const Response wrong = Route(router, MakeRequest("POST", "/x/1"));
  EXPECT_EQ(wrong.status, 405);
  ASSERT_EQ(wrong.headers.size(), 1u);
  EXPECT_EQ(wrong.headers[0].first, "allow");
  EXPECT_EQ(wrong.headers[0].second, "GET, DELETE");
}

TEST(MessageTest, ErrorResponseEscapesAndAccessorsFind) {
  const Response e = ErrorResponse(400, "field \"x\": bad\n");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.body, R"({"error":{"code":400,"message":"field \"x\": bad\n"}})");
  Request req;
  req.headers = {{"content-type", "text/plain"}};
  req.query = "a=1&b=x%20y+z&c";
  EXPECT_EQ(req.header("Content-Type"), "text/plain");
  EXPECT_EQ(req.query_param("b"), "x y z");
  EXPECT_EQ(req.query_param("c"), "");
  EXPECT_EQ(req.query_param("zz"), "");
}

TEST(EndpointTest, ParsesAndRejectsNamingTheUrl) {
  auto a = Endpoint::Parse("http://127.0.0.1:7070");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7070);
  EXPECT_EQ(a->ToString(), "127.0.0.1:7070");
  auto b = Endpoint::Parse("[::1]:80");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->ToString(), "[::1]:80");
  for (const std::string bad : {"localhost", "host:0", "host:99999", ":80", "h:8/x", "h:abc"}) {
    auto r = Endpoint::Parse(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(bad));
  }
  EXPECT_EQ(Get("nohost/x").status().code(), absl::StatusCode::kInvalidArgument);
}

// A loop and a server whose router the test fills in first.
class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = *std::move(loop);
  }
  void StartServer(ServerOptions options = {}) {
    auto server = Server::Start(*loop_, options, std::move(router_));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    endpoint_ = Endpoint{"127.0.0.1", server_->port()};
  }
  std::string Url(const std::string& path) { return "http://" + endpoint_.ToString() + path; }
  void TearDown() override {
    server_.reset();
    loop_.reset();
  }

  Router router_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Server> server_;
  Endpoint endpoint_;
};

void Echo(Request& req, Responder respond) {
  Response r;
  r.content_type = "text/plain";
  r.headers.emplace_back("x-path", req.path);
  r.headers.emplace_back("x-query-a", req.query_param("a"));
  r.headers.emplace_back("x-custom", req.header("X-Custom"));
  r.body = req.method + ":" + req.body;
  respond(std::move(r));
}

std::string HeaderOf(const Response& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST_F(ServerTest, FetchRoundTrip) {
  router_.Handle("POST", "/echo/{id}", Echo);
  StartServer();
  Request req;
  req.method = "POST";
  req.target = "/echo/a%20b?a=1";
  req.headers = {{"X-Custom", "v"}};
  req.body = "hello";
  auto r = Fetch(endpoint_, std::move(req));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST:hello");
  EXPECT_EQ(r->content_type, "text/plain");
  EXPECT_EQ(HeaderOf(*r, "x-path"), "/echo/a b");
  EXPECT_EQ(HeaderOf(*r, "x-query-a"), "1");
  EXPECT_EQ(HeaderOf(*r, "x-custom"), "v");
  EXPECT_EQ(HeaderOf(*r, "server"), "sluice");
  auto post = Post(Url("/echo/1"), "{}");
  ASSERT_TRUE(post.ok()) << post.status();
  EXPECT_EQ(post->body, "POST:{}");
  auto missing = Get(Url("/nothing"));
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->content_type, "application/json");
}

// Sends one request on `client` and waits for its answer.
absl::StatusOr<Response> SendSync(Client& client, const Endpoint& to, const std::string& method,
                                  const std::string& target, std::string body = "",
                                  absl::Duration timeout = absl::Seconds(10)) {
  Request req;
  req.method = method;
  req.target = target;
  req.body = std::move(body);
  absl::Notification done;
  absl::StatusOr<Response> out;
  client.Send(to, std::move(req), timeout, [&](absl::StatusOr<Response> r) {
    out = std::move(r);
    done.Notify();
  });
  done.WaitForNotification();
  return out;
}

TEST_F(ServerTest, ClientReusesKeepAliveConnections) {
  router_.Handle("POST", "/echo", Echo);
  StartServer();
  Client client(*loop_);
  for (int i = 0; i < 50; ++i) {
    auto r = SendSync(client, endpoint_, "POST", "/echo", absl::StrCat(i));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, absl::StrCat("POST:", i));
  }
  EXPECT_EQ(server_->connections_accepted(), 1);
}

TEST_F(ServerTest, ClientRetriesWhenThePeerClosedAnIdleConnection) {
  router_.Handle("GET", "/x", [](Request&, Responder r) { r(JsonResponse(200, "ok")); });
  ServerOptions options;
  options.idle_timeout = absl::Milliseconds(20);
  StartServer(options);
  Client client(*loop_);
  ASSERT_TRUE(SendSync(client, endpoint_, "GET", "/x").ok());
  // Wait until the server's idle sweep has closed the pooled connection.
  while (server_->open_connections() != 0) absl::SleepFor(absl::Milliseconds(5));
  auto r = SendSync(client, endpoint_, "GET", "/x");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "ok");
  EXPECT_EQ(server_->connections_accepted(), 2);
}

TEST_F(ServerTest, DeferredResponderAnsweredFromAnotherThread) {
  std::vector<std::thread> workers;
  absl::Mutex mu;
  router_.Handle("GET", "/slow", [&](Request&, Responder respond) {
    absl::MutexLock lock(&mu);
    workers.emplace_back([respond = std::move(respond)]() mutable {
      absl::SleepFor(absl::Milliseconds(30));
      respond(JsonResponse(202, "later"));
    });
  });
  StartServer();
  auto r = Get(Url("/slow"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 202);
  EXPECT_EQ(r->body, "later");
  absl::MutexLock lock(&mu);
  for (auto& t : workers) t.join();
}

TEST_F(ServerTest, DroppedResponderAnswers500) {
  router_.Handle("GET", "/drop", [](Request&, Responder) {});
  StartServer();
  auto r = Get(Url("/drop"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 500);
  EXPECT_THAT(r->body, HasSubstr("handler dropped the request"));
}

TEST_F(ServerTest, BodyOverTheLimitIs413) {
  router_.Handle("POST", "/echo", Echo);
  ServerOptions options;
  options.max_body_bytes = 1000;
  StartServer(options);
  auto big = Post(Url("/echo"), std::string(5000, 'x'));
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->status, 413);
  auto fits = Post(Url("/echo"), std::string(1000, 'x'));
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->status, 200);
}

TEST_F(ServerTest, ClientTimeoutIsDeadlineExceeded) {
  std::vector<Responder> parked;  // loop thread only
  router_.Handle("GET", "/never", [&](Request&, Responder r) { parked.push_back(std::move(r)); });
  StartServer();
  Client client(*loop_);
  auto r = SendSync(client, endpoint_, "GET", "/never", "", absl::Milliseconds(50));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  auto f = Fetch(endpoint_, MakeRequest("GET", "/never"), absl::Milliseconds(50));
  EXPECT_EQ(f.status().code(), absl::StatusCode::kDeadlineExceeded) << f.status();
  server_->Stop();  // before `parked` dies: the Responders then answer nobody
}

// A bound but never listening socket: connecting to it is refused.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~RefusingPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_;
};

TEST_F(ServerTest, ConnectRefusedIsUnavailableNamingTheEndpoint) {
  RefusingPort refusing;
  const Endpoint to{"127.0.0.1", refusing.port()};
  auto f = Fetch(to, MakeRequest("GET", "/"));
  EXPECT_EQ(f.status().code(), absl::StatusCode::kUnavailable) << f.status();
  EXPECT_THAT(std::string(f.status().message()), HasSubstr(to.ToString()));
  Client client(*loop_);
  auto c = SendSync(client, to, "GET", "/");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable) << c.status();
}

TEST_F(ServerTest, ConcurrentFetchesAllAnsweredCorrectly) {
  router_.Handle("POST", "/echo", Echo);
  StartServer();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string body = absl::StrCat(t, "-", i);
        auto r = Post(Url("/echo"), body);
        if (!r.ok() || r->body != "POST:" + body) wrong.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ServerTest, ClientQueuesBeyondMaxConnectionsAndAnswersAll) {
  router_.Handle("POST", "/echo", Echo);
  StartServer();
  ClientOptions options;
  options.max_connections_per_endpoint = 2;
  Client client(*loop_, options);
  constexpr int kRequests = 100;
  absl::Mutex mu;
  int answered = 0, correct = 0;
  for (int i = 0; i < kRequests; ++i) {
    Request req = MakeRequest("POST", "/echo");
    req.body = absl::StrCat(i);
    client.Send(endpoint_, std::move(req), absl::Seconds(10),
                [&, i](absl::StatusOr<Response> r) {
                  absl::MutexLock lock(&mu);
                  ++answered;
                  if (r.ok() && r->body == absl::StrCat("POST:", i)) ++correct;
                });
  }
  absl::MutexLock lock(&mu);
  mu.Await(absl::Condition(+[](int* n) { return *n == kRequests; }, &answered));
  EXPECT_EQ(correct, kRequests);
  EXPECT_LE(server_->connections_accepted(), 2);
}

// Writes `raw` on a fresh connection and reads until the peer closes.
std::string RawExchange(int port, const std::string& raw) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      write(fd, raw.data(), raw.size()) == static_cast<ssize_t>(raw.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  }
  close(fd);
  return out;
}

TEST_F(ServerTest, PipelinedRequestsAnsweredInOrder) {
  std::vector<std::thread> workers;
  router_.Handle("GET", "/slow", [&](Request&, Responder respond) {
    workers.emplace_back([respond = std::move(respond)]() mutable {
      absl::SleepFor(absl::Milliseconds(30));
      respond(JsonResponse(200, "first"));
    });
  });
  router_.Handle("GET", "/fast", [](Request&, Responder r) { r(JsonResponse(200, "second")); });
  StartServer();
  const std::string out = RawExchange(
      server_->port(),
      "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const size_t first = out.find("first"), second = out.find("second");
  ASSERT_NE(first, std::string::npos) << out;
  ASSERT_NE(second, std::string::npos) << out;
  EXPECT_LT(first, second);
  for (auto& t : workers) t.join();
}

TEST_F(ServerTest, Http10AndExpectContinueAreHonoured) {
  router_.Handle("POST", "/echo", Echo);
  router_.Handle("GET", "/x", [](Request&, Responder r) { r(JsonResponse(200, "x")); });
  StartServer();
  // HTTP/1.0 without keep-alive: a 1.0 answer, then the server closes (or this would hang).
  EXPECT_THAT(RawExchange(server_->port(), "GET /x HTTP/1.0\r\n\r\n"),
              HasSubstr("HTTP/1.0 200"));
  const std::string out = RawExchange(
      server_->port(),
      "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n"
      "Connection: close\r\n\r\nhello");
  const size_t interim = out.find("HTTP/1.1 100 Continue"), final = out.find("HTTP/1.1 200");
  ASSERT_NE(interim, std::string::npos) << out;
  ASSERT_NE(final, std::string::npos) << out;
  EXPECT_LT(interim, final);
  EXPECT_THAT(out, HasSubstr("POST:hello"));
}

TEST_F(ServerTest, OversizedResponseHeaderBecomes500) {
  router_.Handle("GET", "/x", [](Request&, Responder r) {
    Response big = JsonResponse(200, "{}");
    big.headers.emplace_back("x-big", std::string(70000, 'v'));
    r(std::move(big));
  });
  StartServer();
  auto r = Get(Url("/x"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 500);
  EXPECT_THAT(r->body, HasSubstr("bad header"));
}

TEST_F(ServerTest, MalformedRequestIs400) {
  StartServer();
  EXPECT_THAT(RawExchange(server_->port(), "NOT HTTP AT ALL\r\n\r\n"), HasSubstr("400"));
}

TEST_F(ServerTest, StopWithOutstandingRespondersThenAnsweringIsHarmless) {
  std::vector<Responder> parked;
  absl::Mutex mu;
  router_.Handle("GET", "/park", [&](Request&, Responder r) {
    absl::MutexLock lock(&mu);
    parked.push_back(std::move(r));
  });
  StartServer();
  Client client(*loop_);
  std::atomic<int> failed{0};
  for (int i = 0; i < 4; ++i) {
    client.Send(endpoint_, MakeRequest("GET", "/park"), absl::Seconds(10),
                [&](absl::StatusOr<Response> r) {
                  if (!r.ok()) failed.fetch_add(1);
                });
  }
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(+[](std::vector<Responder>* p) { return p->size() == 4; }, &parked));
  }
  server_->Stop();
  std::thread answerer([&] {
    absl::MutexLock lock(&mu);
    for (auto& r : parked) r(JsonResponse(200, "too late"));
    parked.clear();
  });
  answerer.join();
  while (failed.load() != 4) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(server_->open_connections(), 0);
}

TEST_F(ServerTest, ClientDestroyedWithRequestsInFlightDropsCallbacks) {
  std::vector<Responder> parked;  // loop thread only
  router_.Handle("GET", "/park", [&](Request&, Responder r) { parked.push_back(std::move(r)); });
  StartServer();
  std::atomic<int> called{0};
  {
    Client client(*loop_);
    for (int i = 0; i < 3; ++i) {
      client.Send(endpoint_, MakeRequest("GET", "/park"), absl::Seconds(10),
                  [&](absl::StatusOr<Response>) { called.fetch_add(1); });
    }
    while (server_->connections_accepted() < 3) absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(called.load(), 0);
  server_->Stop();
}

TEST(EventLoopTest, TimersRunInTimeThenSchedulingOrderAndCancel) {
  auto loop = EventLoop::Create();
  ASSERT_TRUE(loop.ok());
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification done;
  auto record = [&](int i) {
    return [&, i] {
      absl::MutexLock lock(&mu);
      order.push_back(i);
    };
  };
  const absl::Time t0 = (*loop)->Now() + absl::Milliseconds(20);
  (*loop)->RunAt(t0 + absl::Milliseconds(20), record(4));
  (*loop)->RunAt(t0, record(1));
  const auto cancelled = (*loop)->RunAt(t0 + absl::Milliseconds(5), record(99));
  (*loop)->RunAt(t0 + absl::Milliseconds(10), record(2));
  (*loop)->RunAt(t0 + absl::Milliseconds(10), record(3));
  const auto last = (*loop)->RunAt(t0 + absl::Milliseconds(30), [&] { done.Notify(); });
  EXPECT_TRUE((*loop)->Cancel(cancelled));
  EXPECT_FALSE((*loop)->Cancel(cancelled));
  done.WaitForNotification();
  EXPECT_FALSE((*loop)->Cancel(last));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

TEST(EventLoopTest, PostRunsOnTheLoopThreadAfterDueTimers) {
  auto loop = EventLoop::Create();
  ASSERT_TRUE(loop.ok());
  absl::Notification done;
  std::vector<int> order;  // loop thread only until `done`
  bool in_loop = false;
  (*loop)->RunAt((*loop)->Now() - absl::Seconds(1), [&] { order.push_back(1); });
  (*loop)->Post([&] {
    order.push_back(2);
    in_loop = (*loop)->InLoopThread();
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_TRUE(in_loop);
  EXPECT_FALSE((*loop)->InLoopThread());
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace sluice::runtime::http
