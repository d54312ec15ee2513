// Server: an acceptor and one Conn per TCP connection, all on the EventLoop thread. A Conn
// handles one request at a time (it reads the next only after writing the answer), which keeps
// answers in request order under pipelining. The Server owns its Conns strongly; a Responder
// holds only a weak_ptr, so answering after Stop() or after the peer left is a silent no-op.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"
#include "runtime/http/http.h"
#include "runtime/http/io_gate.h"
#include "runtime/http/server_conn.h"
#include "runtime/http/url.h"

namespace sluice::runtime::http {
namespace internal::server {
namespace {

constexpr uint32_t kHeaderLimitBytes = 64 << 10;
constexpr auto kDrainLimit = std::chrono::seconds(2);
constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

void Conn::Close() {
  if (state_ == ConnState::kClosed) return;
  auto self = shared_from_this();  // the server's map may hold the last reference
  state_ = ConnState::kClosed;
  if (stream_open_) stream_open_->store(false, std::memory_order_release);
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  if (auto srv = server_.lock()) {
    srv->conns.erase(this);
    srv->open.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Conn::CloseIfIdle(SteadyTime now, std::chrono::nanoseconds idle_timeout) {
  if ((state_ == ConnState::kReading && now - since_ > idle_timeout) ||
      (state_ == ConnState::kDraining && now - since_ > kDrainLimit)) {
    Close();
  }
}

void Conn::ReadHeader() {
  state_ = ConnState::kReading;
  since_ = std::chrono::steady_clock::now();
  parser_.emplace();
  parser_->header_limit(kHeaderLimitBytes);
  parser_->body_limit(static_cast<uint64_t>(std::max<int64_t>(0, shared_->options.max_body_bytes)));
  bhttp::async_read_header(socket_, buffer_, *parser_,
                           [self = shared_from_this()](error_code ec, size_t) {
                             self->OnHeader(ec);
                           });
}

void Conn::OnHeader(error_code ec) {
  if (state_ == ConnState::kClosed) return;
  if (ec) return OnReadError(ec);
  if (parser_->is_done()) return OnRequest();
  auto read_body = [self = shared_from_this()](error_code ec2, size_t) {
    if (self->state_ == ConnState::kClosed) return;
    if (ec2) return self->OnReadError(ec2);
    self->OnRequest();
  };
  const auto expect = parser_->get()[bhttp::field::expect];
  if (absl::EqualsIgnoreCase(absl::string_view(expect.data(), expect.size()), "100-continue")) {
    // curl waits a second for this before sending a body over 1 KiB.
    asio::async_write(socket_, asio::buffer(kContinue, sizeof(kContinue) - 1),
                      [self = shared_from_this(), read_body](error_code ec2, size_t) mutable {
                        if (self->state_ == ConnState::kClosed) return;
                        if (ec2) return self->Close();
                        bhttp::async_read(self->socket_, self->buffer_, *self->parser_,
                                          std::move(read_body));
                      });
    return;
  }
  bhttp::async_read(socket_, buffer_, *parser_, std::move(read_body));
}

void Conn::OnReadError(error_code ec) {
  if (ec == bhttp::error::body_limit) {
    Write(ErrorResponse(413, absl::StrCat("request body over the limit of ",
                                          shared_->options.max_body_bytes, " bytes")),
          false);
  } else if (ec == bhttp::error::header_limit) {
    Write(ErrorResponse(431, "request header fields too large"), false);
  } else if (ec.category() == error_code(bhttp::error::end_of_stream).category() &&
             ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
    Write(ErrorResponse(400, absl::StrCat("malformed HTTP request: ", ec.message())), false);
  } else {
    Close();  // the peer left (EOF, reset) or the socket was closed under us
  }
}

void Conn::OnRequest() {
  bhttp::request<bhttp::string_body> msg = parser_->release();
  Request req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  internal::SplitTarget(req);
  req.headers.reserve(8);
  for (const auto& field : msg) {
    std::string name(field.name_string());
    absl::AsciiStrToLower(&name);
    req.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  req.body = std::move(msg.body());
  keep_alive_ = msg.keep_alive();
  version_ = msg.version();
  state_ = ConnState::kHandling;
  const uint64_t seq = ++seq_;
  Responder respond(
      [weak = weak_from_this(), gate = shared_->gate, seq](Response r) mutable {
        if (gate->InLoop()) {  // the common case: answered inside the handler
          if (auto conn = weak.lock()) conn->Reply(seq, std::move(r));
          return;
        }
        gate->Post([weak = std::move(weak), seq, r = std::move(r)]() mutable {
          if (auto conn = weak.lock()) conn->Reply(seq, std::move(r));
        });
      },
      [weak = weak_from_this(), gate = shared_->gate, seq](Response head) {
        return MakeConnStream(weak, gate, seq, std::move(head));
      });
  shared_->router.Dispatch(req, std::move(respond));
}

void Conn::Reply(uint64_t seq, Response response) {
  if (state_ != ConnState::kHandling || seq != seq_) return;  // closed meanwhile, or stale
  Write(std::move(response), keep_alive_);
}

// Beast throws on a few malformed answers (a header over 64 KiB); that becomes a 500.
void FillResponse(bhttp::response<bhttp::string_body>& out, Response& r, unsigned version,
                  bool keep_alive) {
  out = {};
  out.version(version);  // an HTTP/1.0 keep-alive client wants "Connection: keep-alive"
  if (r.status < 100 || r.status > 999) r = ErrorResponse(500, "handler set a bad status");
  try {
    out.result(static_cast<unsigned>(r.status));
    out.set(bhttp::field::server, "sluice");
    if (!r.content_type.empty()) out.set(bhttp::field::content_type, r.content_type);
    for (const auto& [name, value] : r.headers) out.insert(name, value);
  } catch (const std::exception& e) {
    r = ErrorResponse(500, absl::StrCat("handler set a bad header: ", e.what()));
    out = {};
    out.version(version);
    out.result(bhttp::status::internal_server_error);
    out.set(bhttp::field::server, "sluice");
    out.set(bhttp::field::content_type, r.content_type);
  }
  // These statuses carry no body (Beast rejects one).
  if (r.status < 200 || r.status == 204 || r.status == 304) r.body.clear();
  out.body() = std::move(r.body);
  out.keep_alive(keep_alive);
  out.prepare_payload();
}

void Conn::Write(Response r, bool keep_alive) {
  state_ = ConnState::kWriting;
  keep_alive_ = keep_alive;
  FillResponse(response_, r, version_, keep_alive);
  bhttp::async_write(socket_, response_, [self = shared_from_this()](error_code ec, size_t) {
    self->OnWrite(ec);
  });
}

void Conn::OnWrite(error_code ec) {
  if (state_ == ConnState::kClosed) return;
  if (ec) return Close();
  if (keep_alive_) return ReadHeader();
  Drain();
}

void Conn::Drain() {
  state_ = ConnState::kDraining;
  since_ = std::chrono::steady_clock::now();
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  buffer_.consume(buffer_.size());
  auto buf = buffer_.prepare(16 << 10);
  socket_.async_read_some(buf, [self = shared_from_this()](error_code ec2, size_t) {
    if (self->state_ != ConnState::kDraining) return;
    if (ec2) return self->Close();  // the peer's FIN (or an error): done
    self->Drain();
  });
}

void ServerCore::Accept() {
  acceptor.async_accept([self = shared_from_this()](error_code ec, tcp::socket socket) {
    if (self->stopped) return;
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      auto conn = std::make_shared<Conn>(std::move(socket), self->shared, self);
      self->conns.emplace(conn.get(), conn);
      self->accepted.fetch_add(1, std::memory_order_relaxed);
      self->open.fetch_add(1, std::memory_order_relaxed);
      conn->Start();
    }
    if (!ec) return self->Accept();
    // Out of descriptors and the like: retry shortly rather than spin; the sweep frees some.
    self->retry.expires_after(std::chrono::milliseconds(50));
    self->retry.async_wait([self](error_code ec2) {
      if (!ec2 && !self->stopped) self->Accept();
    });
  });
}

void ServerCore::Sweep() {
  const auto idle = std::chrono::nanoseconds(absl::ToInt64Nanoseconds(shared->options.idle_timeout));
  const auto period = std::clamp<std::chrono::nanoseconds>(idle / 4, std::chrono::milliseconds(10),
                                                           std::chrono::seconds(1));
  sweep.expires_after(period);
  sweep.async_wait([self = shared_from_this(), idle](error_code ec) {
    if (ec || self->stopped) return;
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::shared_ptr<Conn>> all;
    all.reserve(self->conns.size());
    for (const auto& [raw, conn] : self->conns) all.push_back(conn);
    for (const auto& conn : all) conn->CloseIfIdle(now, idle);
    self->Sweep();
  });
}

void ServerCore::StopOnLoop() {
  if (stopped) return;
  stopped = true;
  error_code ec;
  acceptor.close(ec);
  sweep.cancel();
  retry.cancel();
  auto all = std::move(conns);
  conns.clear();
  for (auto& [raw, conn] : all) conn->Close();
}

}  // namespace internal::server

namespace {
namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using internal::server::Shared;
}  // namespace

struct Server::Impl : internal::server::ServerCore {
  using ServerCore::ServerCore;
};

Server::Server() = default;

Server::~Server() { Stop(); }

absl::StatusOr<std::unique_ptr<Server>> Server::Start(EventLoop& loop, const ServerOptions& o,
                                                      Router router) {
  auto& io = *static_cast<asio::io_context*>(loop.native_io_context());
  auto shared = std::make_shared<Shared>();
  shared->router = std::move(router);
  shared->options = o;
  shared->gate = loop.gate();
  std::unique_ptr<Server> server(new Server());
  server->impl_ = std::make_shared<Impl>(io);
  Impl& impl = *server->impl_;
  impl.shared = shared;
  const std::string where = absl::StrCat(o.host, ":", o.port);
  error_code ec;
  tcp::endpoint endpoint;
  const auto address = asio::ip::make_address(o.host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, static_cast<uint16_t>(o.port));
  } else {
    tcp::resolver resolver(io);
    auto results = resolver.resolve(o.host, std::to_string(o.port), ec);
    if (ec || results.empty()) {
      return absl::UnavailableError(absl::StrCat("cannot resolve ", where, ": ", ec.message()));
    }
    endpoint = results.begin()->endpoint();
  }
  auto fail = [&where](const char* what, const error_code& e) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": ", what, ": ",
                                               e.message()));
  };
  if (impl.acceptor.open(endpoint.protocol(), ec)) return fail("open", ec);
  if (impl.acceptor.set_option(tcp::acceptor::reuse_address(true), ec)) return fail("option", ec);
  if (impl.acceptor.bind(endpoint, ec)) return fail("bind", ec);
  if (impl.acceptor.listen(asio::socket_base::max_listen_connections, ec)) {
    return fail("listen", ec);
  }
  impl.port = impl.acceptor.local_endpoint(ec).port();
  shared->gate->RunSync([self = server->impl_] {
    self->Accept();
    self->Sweep();
  });
  return server;
}

int Server::port() const { return impl_->port; }

int64_t Server::connections_accepted() const {
  return impl_->accepted.load(std::memory_order_relaxed);
}

int64_t Server::open_connections() const { return impl_->open.load(std::memory_order_relaxed); }

void Server::Stop() {
  if (!impl_) return;
  impl_->shared->gate->RunSync([self = impl_] { self->StopOnLoop(); });
}

}  // namespace sluice::runtime::http
