// runtime/http: the HTTP/1.1 layer of the daemons (gateway, controller, node agent) and of the
// function SDK, over Boost.Beast/Asio. This header is free of Boost: the Asio types live behind
// pimpl in the .cc files so every user compiles fast. Pieces:
//   - EventLoop: one io_context run by one thread, and the daemon's common::Env (timers, Post).
//   - Router + Server: async server; handlers answer through a Responder, now or later.
//   - Client: async keep-alive client on an EventLoop (gateway -> instances, controller polls).
//   - Fetch: a blocking one-shot request (CLI, tests, profiling trials on a worker thread).
// Thread safety: documented on each class.
#ifndef SLUICE_RUNTIME_HTTP_HTTP_H_
#define SLUICE_RUNTIME_HTTP_HTTP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/env.h"

namespace sluice::runtime::http {

namespace internal {
class IoGate;  // io_gate.h: posts onto an io_context that may already be gone
}  // namespace internal

using Headers = std::vector<std::pair<std::string, std::string>>;  // names lower-cased

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query as sent, e.g. "/v2/models/a/infer?x=1"
  std::string path;    // target without the query, percent-decoded
  std::string query;   // after '?', raw
  Headers headers;
  std::string body;
  std::vector<std::pair<std::string, std::string>> params;  // {name} captures of the route
  // The first header (case-insensitive name) / route parameter / query parameter, or "".
  std::string header(const std::string& name) const;
  std::string param(const std::string& name) const;
  std::string query_param(const std::string& name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  Headers headers;  // extra headers, e.g. {"retry-after", "1"}
  std::string body;
};

// {"error": {"code": status, "message": message}} with that status (docs/platform.md).
Response ErrorResponse(int status, const std::string& message);
Response JsonResponse(int status, std::string body);

// The body of an answer written piece by piece as it is produced (server-sent events, token
// streams): HTTP/1.1 chunked transfer encoding, one chunk per Write; an HTTP/1.0 peer gets the
// bytes unframed and the connection closed at the end. Obtained from Responder::Stream.
// Thread safety: every method may be called from any thread; pieces written from one thread
// go out in order.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // Queues `data` as the next piece (empty data is ignored). No-op after End(), once the peer
  // has left, or after the server stopped.
  virtual void Write(std::string data) = 0;
  // Ends the body (the last chunk) once the queued pieces are out. Idempotent. Dropping the last
  // reference without End() aborts instead: the connection is closed mid-body, so the client
  // sees a truncated answer (an error), never a short one that looks complete.
  virtual void End() = 0;
  // False once the peer has gone or the stream was ended: a producer may stop early.
  virtual bool open() const = 0;
};

// Answers one request. Call exactly once (operator() or Stream), from any thread; a Responder
// dropped without being called answers 500 "handler dropped the request".
class Responder {
 public:
  using StartStream = absl::AnyInvocable<std::shared_ptr<ResponseStream>(Response head)>;
  Responder() = default;
  explicit Responder(absl::AnyInvocable<void(Response)> send) : send_(std::move(send)) {}
  // A Responder that can also stream (the Server's).
  Responder(absl::AnyInvocable<void(Response)> send, StartStream start_stream)
      : send_(std::move(send)), start_stream_(std::move(start_stream)) {}
  Responder(Responder&&) = default;
  Responder& operator=(Responder&&) = default;
  ~Responder();
  void operator()(Response response);
  // Starts a streamed answer: head's status, content type and headers now, head.body (if any)
  // as the first piece, then the stream's Writes. Consumes the Responder like operator().
  // A Responder without stream support (built from one callback, as in tests) returns a stream
  // that collects the pieces and sends one whole Response at End() (500 if dropped unended).
  // Called on a used Responder: a stream that is closed from the start.
  std::shared_ptr<ResponseStream> Stream(Response head);

 private:
  absl::AnyInvocable<void(Response)> send_;
  StartStream start_stream_;
};

using Handler = std::function<void(Request&, Responder)>;

// Routes (method, pattern) to handlers. Patterns are literal segments and {name} captures of one
// whole segment: "/v2/models/{name}/infer". Unknown path: 404; known path, other method: 405.
// Not thread-safe to modify; immutable once given to a Server.
class Router {
 public:
  void Handle(const std::string& method, const std::string& pattern, Handler handler);
  // Fills req.params and calls the handler, or answers 404/405.
  void Dispatch(Request& req, Responder respond) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    Handler handler;
  };
  std::vector<Route> routes_;
};

// One io_context driven by one thread: the daemon's event loop and its common::Env (Now() reads
// the steady clock as absl::Time; RunAt/Cancel/Post are thread-safe; callbacks run on the loop).
// Servers and Clients on a loop must be destroyed before it; Responders may outlive it.
class EventLoop : public common::Env {
 public:
  // Starts the loop thread.
  static absl::StatusOr<std::unique_ptr<EventLoop>> Create();
  ~EventLoop() override;  // Stop()s
  absl::Time Now() const override;
  TimerId RunAt(absl::Time when, Callback cb) override;
  bool Cancel(TimerId id) override;
  void Post(Callback cb) override;
  // Stops the loop and joins its thread; pending callbacks are dropped. Idempotent; not from the
  // loop thread.
  void Stop();
  bool InLoopThread() const;
  void* native_io_context();  // boost::asio::io_context*, for runtime/http's own .cc files
  // The loop's gate (io_gate.h), shared with Responders and connections so that a late call
  // after the loop is gone is dropped instead of touching a dead io_context.
  std::shared_ptr<internal::IoGate> gate() const;

 private:
  EventLoop();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: an ephemeral port (see Server::port())
  int64_t max_body_bytes = 64 << 20;  // larger bodies: 413
  absl::Duration idle_timeout = absl::Seconds(60);
};

// Asynchronous HTTP/1.1 server with keep-alive and pipelining-safe in-order answers, on `loop`.
// Thread safety: Start/Stop from any thread but the loop's; handlers run on the loop thread.
class Server {
 public:
  // Binds and starts accepting. Unavailable (naming host:port) when the bind fails.
  static absl::StatusOr<std::unique_ptr<Server>> Start(EventLoop& loop, const ServerOptions& o,
                                                       Router router);
  ~Server();  // Stop()s
  int port() const;
  // Connections accepted since Start (for tests and metrics). Thread-safe.
  int64_t connections_accepted() const;
  // Connections open now (accepted and not yet closed). Thread-safe.
  int64_t open_connections() const;
  // Closes the listener and every connection; requests in flight are dropped.
  void Stop();

 private:
  Server();
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Where a client sends: "host:port" or "http://host:port".
struct Endpoint {
  std::string host;
  int port = 0;
  static absl::StatusOr<Endpoint> Parse(const std::string& url);
  std::string ToString() const;  // "host:port"
};

struct ClientOptions {
  int max_connections_per_endpoint = 64;
  absl::Duration connect_timeout = absl::Seconds(2);
  // A pooled connection unused this long is closed instead of reused (servers drop idle
  // connections too: Server's default is 60 s).
  absl::Duration idle_timeout = absl::Seconds(30);
};

// Callbacks of Client::Stream, all on the loop thread, in this order: on_head once (status and
// headers; body empty) when the header has arrived, on_data for each piece of body as it arrives
// (transfer chunks may be split or merged; de-chunked), then done exactly once: OK after the
// whole body, or the error (Unavailable, DeadlineExceeded), possibly before on_head. Any of them
// may be empty.
struct StreamHandlers {
  absl::AnyInvocable<void(const Response& head)> on_head;
  absl::AnyInvocable<void(std::string_view data)> on_data;
  absl::AnyInvocable<void(absl::Status status)> done;
};

// Asynchronous HTTP/1.1 client with a keep-alive connection pool per endpoint, on `loop`.
// Errors: Unavailable (connect refused/reset, naming the endpoint), DeadlineExceeded (timeout).
// A non-2xx answer is a Response, not an error. Thread safety: Send from any thread; callbacks
// run on the loop thread.
class Client {
 public:
  using Callback = absl::AnyInvocable<void(absl::StatusOr<Response>)>;
  // `loop` must outlive the Client.
  Client(EventLoop& loop, const ClientOptions& options = {});
  // Closes every connection. Callbacks of requests still in flight are dropped: destroyed on the
  // loop thread without being called (a Responder captured in one then answers 500).
  ~Client();
  // `req.target` is sent as is; `req.path`/`params` are ignored. Host header is added.
  void Send(const Endpoint& to, Request req, absl::Duration timeout, Callback done);
  // Like Send, but the body is handed over piece by piece as it arrives (see StreamHandlers).
  // `timeout` bounds the whole exchange, streamed body included.
  void Stream(const Endpoint& to, Request req, absl::Duration timeout, StreamHandlers handlers);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Blocking one-shot request on a private io_context (no loop needed). Same errors as Client.
absl::StatusOr<Response> Fetch(const Endpoint& to, Request req,
                               absl::Duration timeout = absl::Seconds(10));
// Convenience: GET / POST with a body and content type.
absl::StatusOr<Response> Get(const std::string& url_with_path,
                             absl::Duration timeout = absl::Seconds(10));
absl::StatusOr<Response> Post(const std::string& url_with_path, std::string body,
                              const std::string& content_type = "application/json",
                              absl::Duration timeout = absl::Seconds(10));

}  // namespace sluice::runtime::http

#endif  // SLUICE_RUNTIME_HTTP_HTTP_H_
