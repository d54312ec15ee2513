// Server internals shared by server.cc (accept, read, answer) and server_stream.cc (streamed
// answers): the connection state machine. runtime/http internal; loop thread only unless noted.
#ifndef SLUICE_RUNTIME_HTTP_SERVER_CONN_H_
#define SLUICE_RUNTIME_HTTP_SERVER_CONN_H_

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"
#include "runtime/http/http.h"
#include "runtime/http/io_gate.h"

namespace sluice::runtime::http::internal::server {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using SteadyTime = std::chrono::steady_clock::time_point;

// Immutable after Start: shared by the Server and its Conns.
struct Shared {
  Router router;
  ServerOptions options;
  std::shared_ptr<IoGate> gate;
};

class Conn;

// The server proper (Server::Impl is this); Conns point back at it weakly. Loop thread only,
// but for the counters.
struct ServerCore : std::enable_shared_from_this<ServerCore> {
  explicit ServerCore(asio::io_context& io) : acceptor(io), sweep(io), retry(io) {}
  void Accept();
  void Sweep();
  void StopOnLoop();

  std::shared_ptr<const Shared> shared;
  tcp::acceptor acceptor;
  asio::steady_timer sweep;
  asio::steady_timer retry;  // re-accept after an accept error
  absl::flat_hash_map<Conn*, std::shared_ptr<Conn>> conns;  // loop thread only
  std::atomic<int64_t> accepted{0};
  std::atomic<int64_t> open{0};
  int port = 0;
  bool stopped = false;  // loop thread only
};

// Conn states: kReading (waiting for or reading a request) -> kHandling (the handler owns the
// Responder) -> kWriting -> kReading (keep-alive) | kClosed. A malformed or oversized request
// goes kReading -> kWriting (the 4xx) -> kDraining (we sent FIN; reading until the peer's FIN
// so our close does not reset the answer away) -> kClosed. Any state -> kClosed on error,
// idle timeout or Server::Stop. A streamed answer (Responder::Stream) goes kHandling ->
// kStreaming (header written, pieces written as they come; never idle-closed) -> kReading after
// the last chunk (keep-alive) | kDraining (HTTP/1.0: the end of the body is our FIN) | kClosed
// (aborted: the stream was dropped unended).
enum class ConnState { kReading, kHandling, kWriting, kStreaming, kDraining, kClosed };

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(tcp::socket socket, std::shared_ptr<const Shared> shared, std::weak_ptr<ServerCore> srv)
      : socket_(std::move(socket)), shared_(std::move(shared)), server_(std::move(srv)) {}

  void Start() { ReadHeader(); }
  void Close();
  // Closes the connection if it has waited too long in a waiting state.
  void CloseIfIdle(SteadyTime now, std::chrono::nanoseconds idle_timeout);
  void Reply(uint64_t seq, Response response);
  // Streamed answers (server_stream.cc); each does nothing unless `seq` is the request being
  // answered. `open` is cleared when the connection closes.
  void StartStream(uint64_t seq, Response head, std::shared_ptr<std::atomic<bool>> open);
  void StreamWrite(uint64_t seq, std::string data);
  void StreamEnd(uint64_t seq);
  void StreamAbort(uint64_t seq);

 private:
  void StreamFlush();
  void OnStreamWritten(error_code ec);
  void ReadHeader();
  void OnHeader(error_code ec);
  void OnRequest();
  void OnReadError(error_code ec);
  void Write(Response response, bool keep_alive);
  void OnWrite(error_code ec);
  void Drain();

  tcp::socket socket_;
  std::shared_ptr<const Shared> shared_;
  std::weak_ptr<ServerCore> server_;
  boost::beast::flat_buffer buffer_;  // reused across the connection's requests
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bhttp::response<bhttp::string_body> response_;
  ConnState state_ = ConnState::kReading;
  SteadyTime since_ = std::chrono::steady_clock::now();  // entered the current state
  uint64_t seq_ = 0;                                     // requests read so far
  bool keep_alive_ = true;
  unsigned version_ = 11;  // of the request being answered
  // kStreaming only: framed bytes waiting, bytes on the wire, and how the body ends.
  std::string stream_pending_;
  std::string stream_wire_;
  bool stream_writing_ = false;
  bool stream_end_queued_ = false;
  bool stream_chunked_ = true;  // false for HTTP/1.0: unframed, ended by closing
  std::shared_ptr<std::atomic<bool>> stream_open_;
};

// The ResponseStream of a server connection (server_stream.cc): thread-safe, posts to the loop.
std::shared_ptr<ResponseStream> MakeConnStream(std::weak_ptr<Conn> conn,
                                               std::shared_ptr<IoGate> gate, uint64_t seq,
                                               Response head);

}  // namespace sluice::runtime::http::internal::server

#endif  // SLUICE_RUNTIME_HTTP_SERVER_CONN_H_
