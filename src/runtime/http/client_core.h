// Client internals shared by client.cc (connections, pooling, plain exchanges) and
// client_stream.cc (streamed bodies). runtime/http internal; loop thread only unless noted.
#ifndef SLUICE_RUNTIME_HTTP_CLIENT_CORE_H_
#define SLUICE_RUNTIME_HTTP_CLIENT_CORE_H_

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"
#include "runtime/http/http.h"
#include "runtime/http/io_gate.h"

namespace sluice::runtime::http::internal::client {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

// The status and headers of an answer (content-type lifted out), body left empty.
template <class Body>
Response HeadOf(const bhttp::response<Body>& msg) {
  Response out;
  out.status = static_cast<int>(msg.result_int());
  out.content_type.clear();
  for (const auto& field : msg) {
    std::string name(field.name_string());
    absl::AsciiStrToLower(&name);
    if (name == "content-type") {
      out.content_type = std::string(field.value());
    } else {
      out.headers.emplace_back(std::move(name), std::string(field.value()));
    }
  }
  return out;
}

inline std::chrono::nanoseconds ToChrono(absl::Duration d) {
  if (d > absl::Hours(24 * 365)) d = absl::Hours(24 * 365);  // "forever" without overflow
  return std::chrono::nanoseconds(absl::ToInt64Nanoseconds(d));
}

struct Conn {
  explicit Conn(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
  boost::beast::flat_buffer buffer;  // reused across the connection's responses
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> stream_parser;  // Client::Stream
  Clock::time_point idle_since;
  bool reused = false;  // came from the idle pool: the peer may have closed it meanwhile
};

// Op phases: kQueued (waiting for a connection slot) | kConnecting -> kExchanging -> done.
enum class Phase { kQueued, kConnecting, kExchanging, kDone };

struct Op {
  Op(asio::io_context& io, Client::Callback cb) : timer(io), done(std::move(cb)) {}
  Endpoint to;
  std::string key;  // to.ToString()
  bhttp::request<bhttp::string_body> request;
  asio::steady_timer timer;
  Client::Callback done;
  Clock::time_point deadline;
  Phase phase = Phase::kQueued;
  std::shared_ptr<Conn> conn;
  uint64_t timer_gen = 0;  // a timer handler of an older arming does nothing
  bool retried = false;
  // Client::Stream only (then `done` is empty): the handlers, the read buffer, on_head called.
  std::unique_ptr<StreamHandlers> stream;
  std::unique_ptr<std::array<char, 16 << 10>> stream_buffer;
  bool head_sent = false;
};

struct Pool {
  std::vector<std::shared_ptr<Conn>> idle;
  int open = 0;  // idle + active + connecting
  std::deque<std::shared_ptr<Op>> waiting;
};

// The client proper; Client::Impl and Fetch both use it. All methods but Send run on the
// io_context's thread.
class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  ClientCore(asio::io_context& io, std::shared_ptr<IoGate> gate, ClientOptions options)
      : io_(io), gate_(std::move(gate)), options_(options) {}

  // Thread-safe.
  void Send(const Endpoint& to, Request req, absl::Duration timeout, Client::Callback done);
  void SendStream(const Endpoint& to, Request req, absl::Duration timeout, StreamHandlers h);
  // Closes everything; callbacks of unfinished requests are destroyed uncalled.
  void Shutdown();
  const std::shared_ptr<IoGate>& gate() const { return gate_; }

 private:
  void Launch(std::shared_ptr<Op> op, const Endpoint& to, Request req, absl::Duration timeout);
  void Start(std::shared_ptr<Op> op);
  void Acquire(const std::shared_ptr<Op>& op);
  void Connect(const std::shared_ptr<Op>& op);
  void OnConnected(const std::shared_ptr<Op>& op, error_code ec);
  void Exchange(const std::shared_ptr<Op>& op);
  void OnRead(const std::shared_ptr<Op>& op, error_code ec);
  // client_stream.cc: the body of a Client::Stream exchange, piece by piece.
  void ReadStreamed(const std::shared_ptr<Op>& op, const std::shared_ptr<Conn>& conn);
  void OnStreamRead(const std::shared_ptr<Op>& op, error_code ec);
  bool MaybeRetry(const std::shared_ptr<Op>& op, error_code ec);
  void ArmTimer(const std::shared_ptr<Op>& op, Clock::time_point at);
  void OnTimer(const std::shared_ptr<Op>& op);
  void Complete(const std::shared_ptr<Op>& op, absl::StatusOr<Response> result, bool keep);
  void Release(Pool& pool, std::shared_ptr<Conn> conn, bool keep);
  void Pump(Pool& pool);
  absl::Status Failure(const Op& op, const char* what, error_code ec) const;

  asio::io_context& io_;
  std::shared_ptr<IoGate> gate_;
  const ClientOptions options_;
  absl::flat_hash_map<std::string, Pool> pools_;
  absl::flat_hash_map<Op*, std::shared_ptr<Op>> active_;  // connecting or exchanging
  bool shut_ = false;
};

}  // namespace sluice::runtime::http::internal::client

#endif  // SLUICE_RUNTIME_HTTP_CLIENT_CORE_H_
