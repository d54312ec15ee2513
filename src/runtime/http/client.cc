// Client and Fetch. ClientCore runs on one io_context: the EventLoop's for Client, a private one
// for Fetch. Each endpoint has a pool of idle keep-alive connections (reused LIFO, so the
// warmest socket goes first) and a FIFO of requests waiting for a connection slot. An Op is one
// request: it owns its deadline timer and, while active, one connection. Complete() is the only
// place that ends an Op, so every callback is called at most once.
#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"
#include "runtime/http/http.h"
#include "runtime/http/client_core.h"
#include "runtime/http/io_gate.h"
#include "runtime/http/url.h"

namespace sluice::runtime::http {
namespace internal::client {
namespace {

// Builds the wire request; Beast throws on a few malformed inputs, so catch at this boundary.
absl::Status BuildRequest(const Endpoint& to, Request& req,
                          bhttp::request<bhttp::string_body>& out) {
  try {
    out.version(11);
    const bhttp::verb verb = bhttp::string_to_verb(req.method);
    if (verb == bhttp::verb::unknown) {
      out.method_string(req.method);
    } else {
      out.method(verb);
    }
    out.target(req.target.empty() ? "/" : req.target);
    out.set(bhttp::field::host, to.ToString());
    for (const auto& [name, value] : req.headers) {
      if (!absl::EqualsIgnoreCase(name, "host")) out.insert(name, value);
    }
    out.body() = std::move(req.body);
    out.keep_alive(true);
    out.prepare_payload();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad request to ", to.ToString(), ": ", e.what()));
  }
  return absl::OkStatus();
}

Response ToResponse(bhttp::response<bhttp::string_body>& msg) {
  Response out = HeadOf(msg);
  out.body = std::move(msg.body());
  return out;
}

}  // namespace

void ClientCore::Send(const Endpoint& to, Request req, absl::Duration timeout,
                      Client::Callback done) {
  Launch(std::make_shared<Op>(io_, std::move(done)), to, std::move(req), timeout);
}

void ClientCore::SendStream(const Endpoint& to, Request req, absl::Duration timeout,
                            StreamHandlers h) {
  auto op = std::make_shared<Op>(io_, nullptr);
  op->stream = std::make_unique<StreamHandlers>(std::move(h));
  op->stream_buffer = std::make_unique<std::array<char, 16 << 10>>();
  Launch(std::move(op), to, std::move(req), timeout);
}

void ClientCore::Launch(std::shared_ptr<Op> op, const Endpoint& to, Request req,
                        absl::Duration timeout) {
  op->to = to;
  op->key = to.ToString();
  op->deadline = Clock::now() + ToChrono(timeout);
  if (absl::Status s = BuildRequest(to, req, op->request); !s.ok()) {
    gate_->Dispatch([self = shared_from_this(), op, s]() mutable {
      self->Complete(op, s, false);
    });
    return;
  }
  gate_->Dispatch([self = shared_from_this(), op = std::move(op)]() mutable {
    self->Start(std::move(op));
  });
}

void ClientCore::Start(std::shared_ptr<Op> op) {
  if (shut_) return;
  ArmTimer(op, op->deadline);
  Acquire(op);
}

void ClientCore::Acquire(const std::shared_ptr<Op>& op) {
  Pool& pool = pools_[op->key];
  const auto now = Clock::now();
  // A retry goes to a fresh connection: the pool may hold more sockets the peer closed.
  while (!op->retried && !pool.idle.empty()) {
    std::shared_ptr<Conn> conn = std::move(pool.idle.back());
    pool.idle.pop_back();
    if (now - conn->idle_since > ToChrono(options_.idle_timeout)) {
      Release(pool, std::move(conn), false);
      continue;
    }
    conn->reused = true;
    op->conn = std::move(conn);
    return Exchange(op);
  }
  if (pool.open >= options_.max_connections_per_endpoint && !op->retried) {
    op->phase = Phase::kQueued;
    pool.waiting.push_back(op);
    return;
  }
  ++pool.open;
  op->conn = std::make_shared<Conn>(io_);
  Connect(op);
}

void ClientCore::Connect(const std::shared_ptr<Op>& op) {
  op->phase = Phase::kConnecting;
  active_.emplace(op.get(), op);
  ArmTimer(op, std::min(op->deadline, Clock::now() + ToChrono(options_.connect_timeout)));
  error_code ec;
  const auto address = asio::ip::make_address(op->to.host, ec);
  if (!ec) {
    // Handlers hold the Conn too: a timeout may take it from the Op while an operation on
    // its socket and buffers is still pending.
    op->conn->socket.async_connect(
        tcp::endpoint(address, static_cast<uint16_t>(op->to.port)),
        [self = shared_from_this(), op, conn = op->conn](error_code ec2) {
          self->OnConnected(op, ec2);
        });
    return;
  }
  auto resolver = std::make_shared<tcp::resolver>(io_);
  resolver->async_resolve(
      op->to.host, std::to_string(op->to.port),
      [self = shared_from_this(), op, resolver](error_code ec2, tcp::resolver::results_type r) {
        if (op->phase != Phase::kConnecting) return;
        if (ec2) return self->Complete(op, self->Failure(*op, "resolve", ec2), false);
        asio::async_connect(op->conn->socket, r,
                            [self, op, conn = op->conn](error_code ec3, const tcp::endpoint&) {
                              self->OnConnected(op, ec3);
                            });
      });
}

void ClientCore::OnConnected(const std::shared_ptr<Op>& op, error_code ec) {
  if (op->phase != Phase::kConnecting) return;  // timed out meanwhile
  if (ec) return Complete(op, Failure(*op, "connect", ec), false);
  error_code ignored;
  op->conn->socket.set_option(tcp::no_delay(true), ignored);
  ArmTimer(op, op->deadline);
  Exchange(op);
}

void ClientCore::Exchange(const std::shared_ptr<Op>& op) {
  op->phase = Phase::kExchanging;
  op->conn->parser.reset();  // MaybeRetry asks whether *this* answer began
  op->conn->stream_parser.reset();
  active_.emplace(op.get(), op);
  bhttp::async_write(
      op->conn->socket, op->request,
      [self = shared_from_this(), op, conn = op->conn](error_code ec, size_t) {
        if (op->phase != Phase::kExchanging || op->conn != conn) return;
        if (ec) {
          if (!self->MaybeRetry(op, ec)) self->Complete(op, self->Failure(*op, "send", ec), false);
          return;
        }
        if (op->stream) return self->ReadStreamed(op, conn);
        conn->parser.emplace();
        conn->parser->body_limit(std::numeric_limits<uint64_t>::max());
        conn->parser->skip(op->request.method() == bhttp::verb::head);  // no body follows
        bhttp::async_read(conn->socket, conn->buffer, *conn->parser,
                          [self, op, conn](error_code ec2, size_t) {
                            if (op->conn != conn) return;  // ended or retried meanwhile
                            self->OnRead(op, ec2);
                          });
      });
}

void ClientCore::OnRead(const std::shared_ptr<Op>& op, error_code ec) {
  if (op->phase != Phase::kExchanging) return;
  if (ec) {
    if (!MaybeRetry(op, ec)) Complete(op, Failure(*op, "receive", ec), false);
    return;
  }
  auto msg = op->conn->parser->release();
  const bool keep = msg.keep_alive() && !msg.need_eof();
  Complete(op, ToResponse(msg), keep);
}

bool ClientCore::MaybeRetry(const std::shared_ptr<Op>& op, error_code ec) {
  const bool peer_closed = ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
                           ec == asio::error::connection_reset || ec == asio::error::broken_pipe;
  const bool got_some = (op->conn->parser.has_value() && op->conn->parser->got_some()) ||
                        (op->conn->stream_parser.has_value() && op->conn->stream_parser->got_some());
  if (!peer_closed || !op->conn->reused || op->retried || got_some) return false;
  active_.erase(op.get());
  Release(pools_[op->key], std::move(op->conn), false);
  op->retried = true;
  Acquire(op);
  return true;
}

void ClientCore::ArmTimer(const std::shared_ptr<Op>& op, Clock::time_point at) {
  const uint64_t gen = ++op->timer_gen;
  op->timer.expires_at(at);
  op->timer.async_wait([self = shared_from_this(), op, gen](error_code ec) {
    if (ec || gen != op->timer_gen) return;
    self->OnTimer(op);
  });
}

void ClientCore::OnTimer(const std::shared_ptr<Op>& op) {
  if (op->phase == Phase::kDone) return;
  if (op->phase == Phase::kQueued) {
    auto& waiting = pools_[op->key].waiting;
    waiting.erase(std::remove(waiting.begin(), waiting.end(), op), waiting.end());
  }
  if (op->phase == Phase::kConnecting && Clock::now() < op->deadline) {
    return Complete(op, absl::UnavailableError(absl::StrCat(
                            "connect to ", op->key, " timed out after ",
                            absl::FormatDuration(options_.connect_timeout))),
                    false);
  }
  Complete(op, absl::DeadlineExceededError(absl::StrCat("request to ", op->key, " ",
                                                        std::string(op->request.target()),
                                                        " timed out")),
           false);
}

absl::Status ClientCore::Failure(const Op& op, const char* what, error_code ec) const {
  return absl::UnavailableError(
      absl::StrCat(what, " ", op.key, " failed: ", ec.message()));
}

void ClientCore::Complete(const std::shared_ptr<Op>& op, absl::StatusOr<Response> result,
                          bool keep) {
  op->phase = Phase::kDone;
  ++op->timer_gen;
  op->timer.cancel();
  active_.erase(op.get());
  Pool& pool = pools_[op->key];
  if (op->conn) Release(pool, std::move(op->conn), keep);
  Pump(pool);
  Client::Callback done = std::move(op->done);
  op->done = nullptr;
  std::unique_ptr<StreamHandlers> stream = std::move(op->stream);
  if (shut_) return;
  if (done) done(std::move(result));
  if (stream && stream->done) stream->done(result.status());
}

void ClientCore::Release(Pool& pool, std::shared_ptr<Conn> conn, bool keep) {
  if (keep && !shut_) {
    conn->idle_since = Clock::now();
    pool.idle.push_back(std::move(conn));
    return;
  }
  error_code ec;
  conn->socket.shutdown(tcp::socket::shutdown_both, ec);
  conn->socket.close(ec);
  --pool.open;
}

// Hands free capacity to waiting requests, oldest first.
void ClientCore::Pump(Pool& pool) {
  while (!shut_ && !pool.waiting.empty() &&
         (!pool.idle.empty() || pool.open < options_.max_connections_per_endpoint)) {
    std::shared_ptr<Op> op = std::move(pool.waiting.front());
    pool.waiting.pop_front();
    Acquire(op);
  }
}

void ClientCore::Shutdown() {
  shut_ = true;
  auto active = std::move(active_);
  active_.clear();
  for (auto& [raw, op] : active) {
    op->done = nullptr;
    op->stream.reset();
    Complete(op, absl::CancelledError("client shut down"), false);
  }
  for (auto& [key, pool] : pools_) {
    for (auto& conn : pool.idle) {
      error_code ec;
      conn->socket.close(ec);
    }
    pool.idle.clear();
    for (auto& op : pool.waiting) {
      ++op->timer_gen;
      op->timer.cancel();
      op->done = nullptr;
      op->stream.reset();
    }
    pool.waiting.clear();
  }
}

}  // namespace internal::client

struct Client::Impl : internal::client::ClientCore {
  using ClientCore::ClientCore;
};

Client::Client(EventLoop& loop, const ClientOptions& options)
    : impl_(std::make_shared<Impl>(*static_cast<boost::asio::io_context*>(loop.native_io_context()),
                                   loop.gate(), options)) {}

Client::~Client() {
  // Synchronous, so that no callback runs once the destructor has returned.
  impl_->gate()->RunSync([core = impl_] { core->Shutdown(); });
}

void Client::Send(const Endpoint& to, Request req, absl::Duration timeout, Callback done) {
  impl_->Send(to, std::move(req), timeout, std::move(done));
}

void Client::Stream(const Endpoint& to, Request req, absl::Duration timeout,
                    StreamHandlers handlers) {
  impl_->SendStream(to, std::move(req), timeout, std::move(handlers));
}

absl::StatusOr<Response> Fetch(const Endpoint& to, Request req, absl::Duration timeout) {
  boost::asio::io_context io(1);
  auto gate = std::make_shared<internal::IoGate>(&io);
  absl::StatusOr<Response> result = absl::InternalError("Fetch: the request never completed");
  {
    auto core = std::make_shared<internal::client::ClientCore>(io, gate, ClientOptions{});
    core->Send(to, std::move(req), timeout,
               [&result](absl::StatusOr<Response> r) { result = std::move(r); });
    boost::system::error_code ec;
    io.run(ec);
    core->Shutdown();
  }
  gate->Close();
  return result;
}

absl::StatusOr<Response> Get(const std::string& url_with_path, absl::Duration timeout) {
  auto parsed = internal::ParseUrl(url_with_path);
  if (!parsed.ok()) return parsed.status();
  Request req;
  req.method = "GET";
  req.target = std::move(parsed->second);
  return Fetch(parsed->first, std::move(req), timeout);
}

absl::StatusOr<Response> Post(const std::string& url_with_path, std::string body,
                              const std::string& content_type, absl::Duration timeout) {
  auto parsed = internal::ParseUrl(url_with_path);
  if (!parsed.ok()) return parsed.status();
  Request req;
  req.method = "POST";
  req.target = std::move(parsed->second);
  if (!content_type.empty()) req.headers.emplace_back("content-type", content_type);
  req.body = std::move(body);
  return Fetch(parsed->first, std::move(req), timeout);
}

}  // namespace sluice::runtime::http
