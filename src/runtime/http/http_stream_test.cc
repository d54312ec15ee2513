// Tests of streamed answers: Responder::Stream on the server (chunked framing on the wire, pieces
// delivered before the end, keep-alive after, HTTP/1.0, abort on drop, open() after the peer
// left) and Client::Stream (incremental pieces, plain answers, errors), plus the buffering
// fallback of a Responder that cannot stream.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/http/http.h"

namespace sluice::runtime::http {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = *std::move(loop);
  }
  void StartServer() {
    auto server = Server::Start(*loop_, {}, std::move(router_));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    endpoint_ = Endpoint{"127.0.0.1", server_->port()};
  }
  void TearDown() override {
    server_.reset();
    loop_.reset();
  }

  Router router_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Server> server_;
  Endpoint endpoint_;
};

Response SseHead() {
  Response head;
  head.content_type = "text/event-stream";
  head.headers.emplace_back("cache-control", "no-cache");
  return head;
}

// What a Client::Stream call saw.
struct Seen {
  absl::Mutex mu;
  int status = 0;
  std::string content_type;
  std::vector<std::string> pieces;
  std::string body;
  absl::Status done = absl::UnknownError("not done");
  absl::Notification finished;
};

StreamHandlers Collect(Seen& seen, absl::AnyInvocable<void(std::string_view)> also = nullptr) {
  StreamHandlers h;
  h.on_head = [&seen](const Response& head) {
    absl::MutexLock lock(&seen.mu);
    seen.status = head.status;
    seen.content_type = head.content_type;
  };
  h.on_data = [&seen, also = std::move(also)](std::string_view data) mutable {
    {
      absl::MutexLock lock(&seen.mu);
      seen.pieces.emplace_back(data);
      seen.body += data;
    }
    if (also) also(data);
  };
  h.done = [&seen](absl::Status s) {
    {
      absl::MutexLock lock(&seen.mu);
      seen.done = s;
    }
    seen.finished.Notify();
  };
  return h;
}

Request Get(const std::string& target) {
  Request req;
  req.method = "GET";
  req.target = target;
  return req;
}

// The server writes the second piece only after the client has received the first, so the test
// passes only if pieces travel before the end of the answer.
TEST_F(StreamTest, PiecesArriveBeforeTheEndAndTheConnectionIsKeptAlive) {
  absl::Notification first_seen;
  router_.Handle("GET", "/sse", [&first_seen](Request&, Responder respond) {
    std::shared_ptr<ResponseStream> stream = respond.Stream(SseHead());
    stream->Write("data: 1\n\n");
    std::thread([stream, &first_seen] {
      first_seen.WaitForNotification();
      stream->Write("data: 2\n\n");
      stream->End();
      stream->Write("ignored after End");
    }).detach();
  });
  router_.Handle("GET", "/plain", [](Request&, Responder r) { r(JsonResponse(200, "{}")); });
  StartServer();
  Client client(*loop_);
  Seen seen;
  client.Stream(endpoint_, Get("/sse"), absl::Seconds(10),
                Collect(seen, [&first_seen](std::string_view d) {
                  if (d.find("data: 1") != std::string_view::npos) first_seen.Notify();
                }));
  ASSERT_TRUE(seen.finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
  {
    absl::MutexLock lock(&seen.mu);
    EXPECT_TRUE(seen.done.ok()) << seen.done;
    EXPECT_EQ(seen.status, 200);
    EXPECT_EQ(seen.content_type, "text/event-stream");
    EXPECT_EQ(seen.body, "data: 1\n\ndata: 2\n\n");
    EXPECT_GE(seen.pieces.size(), 2u);
  }
  // The same pooled connection serves the next request: the chunked body was ended properly.
  absl::Notification next;
  absl::StatusOr<Response> plain;
  client.Send(endpoint_, Get("/plain"), absl::Seconds(10), [&](absl::StatusOr<Response> r) {
    plain = std::move(r);
    next.Notify();
  });
  next.WaitForNotification();
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->body, "{}");
  EXPECT_EQ(server_->connections_accepted(), 1);
}

TEST_F(StreamTest, PlainFetchGetsTheWholeDechunkedBodyAndHeadBodyComesFirst) {
  router_.Handle("GET", "/s", [](Request&, Responder respond) {
    Response head = SseHead();
    head.body = "a";
    auto stream = respond.Stream(std::move(head));
    for (int i = 0; i < 100; ++i) stream->Write(absl::StrCat(i % 10));
    stream->End();
  });
  StartServer();
  auto r = Fetch(endpoint_, Get("/s"));
  ASSERT_TRUE(r.ok()) << r.status();
  std::string want = "a";
  for (int i = 0; i < 100; ++i) absl::StrAppend(&want, i % 10);
  EXPECT_EQ(r->body, want);
  EXPECT_EQ(r->content_type, "text/event-stream");
}

TEST_F(StreamTest, ClientStreamReadsAPlainAnswerAndLargeBodiesWhole) {
  const std::string big(100 << 10, 'x');
  router_.Handle("GET", "/big", [&big](Request&, Responder r) { r(JsonResponse(201, big)); });
  StartServer();
  Client client(*loop_);
  Seen seen;
  client.Stream(endpoint_, Get("/big"), absl::Seconds(10), Collect(seen));
  ASSERT_TRUE(seen.finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::MutexLock lock(&seen.mu);
  EXPECT_TRUE(seen.done.ok()) << seen.done;
  EXPECT_EQ(seen.status, 201);
  EXPECT_EQ(seen.body, big);
  EXPECT_GE(seen.pieces.size(), 2u);  // bigger than the client's 16 KiB buffer
}

TEST_F(StreamTest, DroppingAStreamUnendedIsAnErrorForTheClient) {
  router_.Handle("GET", "/drop", [](Request&, Responder respond) {
    auto stream = respond.Stream(SseHead());
    stream->Write("data: partial\n\n");
  });  // the last reference goes here, without End()
  StartServer();
  Client client(*loop_);
  Seen seen;
  client.Stream(endpoint_, Get("/drop"), absl::Seconds(10), Collect(seen));
  ASSERT_TRUE(seen.finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::MutexLock lock(&seen.mu);
  EXPECT_EQ(seen.done.code(), absl::StatusCode::kUnavailable) << seen.done;
  EXPECT_THAT(std::string(seen.done.message()), HasSubstr(endpoint_.ToString()));
}

TEST_F(StreamTest, ClientStreamTimesOutAndRefusalIsUnavailable) {
  std::shared_ptr<ResponseStream> held;
  router_.Handle("GET", "/slow", [&held](Request&, Responder respond) {
    held = respond.Stream(SseHead());
  });
  StartServer();
  Client client(*loop_);
  Seen slow;
  client.Stream(endpoint_, Get("/slow"), absl::Milliseconds(200), Collect(slow));
  ASSERT_TRUE(slow.finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
  {
    absl::MutexLock lock(&slow.mu);
    EXPECT_EQ(slow.done.code(), absl::StatusCode::kDeadlineExceeded) << slow.done;
    EXPECT_EQ(slow.status, 200);  // the head had arrived
  }
  // The client closed its side: the server's stream notices and reports closed.
  for (int i = 0; i < 200 && held->open(); ++i) {
    held->Write("data: x\n\n");
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_FALSE(held->open());
  server_->Stop();
  Seen refused;
  client.Stream(endpoint_, Get("/slow"), absl::Seconds(10), Collect(refused));
  ASSERT_TRUE(refused.finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::MutexLock lock(&refused.mu);
  EXPECT_EQ(refused.done.code(), absl::StatusCode::kUnavailable) << refused.done;
}

// Reads everything a raw socket gets until the server closes it.
std::string RawExchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return "connect failed";
  (void)!write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST_F(StreamTest, WireFramingIsChunkedForHttp11AndUnframedForHttp10) {
  router_.Handle("GET", "/s", [](Request&, Responder respond) {
    auto stream = respond.Stream(SseHead());
    stream->Write("hello");
    stream->Write(std::string(20, 'z'));
    stream->End();
  });
  StartServer();
  const std::string v11 =
      RawExchange(server_->port(), "GET /s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(v11, HasSubstr("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(v11, HasSubstr("Transfer-Encoding: chunked\r\n"));
  EXPECT_THAT(v11, HasSubstr("Content-Type: text/event-stream\r\n"));
  EXPECT_THAT(v11, HasSubstr("\r\n\r\n5\r\nhello\r\n14\r\nzzzzzzzzzzzzzzzzzzzz\r\n0\r\n\r\n"));
  const std::string v10 = RawExchange(server_->port(), "GET /s HTTP/1.0\r\n\r\n");
  EXPECT_THAT(v10, HasSubstr("HTTP/1.0 200 OK\r\n"));
  EXPECT_THAT(v10, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(v10, ::testing::EndsWith("\r\n\r\nhello" + std::string(20, 'z')));
  EXPECT_THAT(v10, ::testing::Not(HasSubstr("chunked")));
}

TEST_F(StreamTest, BadStreamHeadsAnswer500) {
  router_.Handle("GET", "/bad", [](Request&, Responder respond) {
    Response head = SseHead();
    head.headers.emplace_back("x-evil", "a\r\nInjected: 1");
    respond.Stream(std::move(head))->End();
  });
  StartServer();
  auto r = Fetch(endpoint_, Get("/bad"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 500);
  EXPECT_THAT(r->body, HasSubstr("bad header"));
}

TEST(ResponderStreamTest, WithoutStreamSupportPiecesAreBufferedIntoOneAnswer) {
  std::vector<Response> sent;
  {
    Responder respond([&sent](Response r) { sent.push_back(std::move(r)); });
    auto stream = respond.Stream(SseHead());
    EXPECT_TRUE(stream->open());
    stream->Write("a");
    stream->Write("b");
    stream->End();
    EXPECT_FALSE(stream->open());
    stream->Write("c");
  }
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].body, "ab");
  EXPECT_EQ(sent[0].content_type, "text/event-stream");
  {
    Responder respond([&sent](Response r) { sent.push_back(std::move(r)); });
    respond.Stream(SseHead())->Write("lost");
  }
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].status, 500);
  std::vector<int> statuses;
  for (const auto& r : sent) statuses.push_back(r.status);
  EXPECT_THAT(statuses, ElementsAre(200, 500));
}

}  // namespace
}  // namespace sluice::runtime::http
