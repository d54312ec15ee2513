// Streamed answers of the Server (Responder::Stream): the header goes out at once with
// `Transfer-Encoding: chunked`, each Write becomes one chunk, End writes the last chunk. Pieces
// queue in the Conn while a write is on the wire and leave together in the next write, so a fast
// producer costs one syscall per batch, not per piece. A ConnStream is the thread-safe handle:
// every call posts to the loop and names the request's sequence number, so a late call after the
// connection moved on (or closed) is a no-op.
#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "boost/asio/write.hpp"
#include "runtime/http/server_conn.h"

namespace sluice::runtime::http::internal::server {
namespace {

class ConnStream : public ResponseStream {
 public:
  ConnStream(std::weak_ptr<Conn> conn, std::shared_ptr<IoGate> gate, uint64_t seq)
      : conn_(std::move(conn)), gate_(std::move(gate)), seq_(seq),
        open_(std::make_shared<std::atomic<bool>>(true)) {}
  ~ConnStream() override {
    if (!ended_.exchange(true)) Run([seq = seq_](Conn& c) { c.StreamAbort(seq); });
  }
  void Start(Response head) {
    Run([seq = seq_, head = std::move(head), open = open_](Conn& c) mutable {
      c.StartStream(seq, std::move(head), std::move(open));
    });
  }
  void Write(std::string data) override {
    if (data.empty() || ended_.load(std::memory_order_acquire)) return;
    Run([seq = seq_, data = std::move(data)](Conn& c) mutable {
      c.StreamWrite(seq, std::move(data));
    });
  }
  void End() override {
    if (ended_.exchange(true)) return;
    open_->store(false, std::memory_order_release);
    Run([seq = seq_](Conn& c) { c.StreamEnd(seq); });
  }
  bool open() const override {
    return !ended_.load(std::memory_order_acquire) && open_->load(std::memory_order_acquire);
  }

 private:
  // Runs `fn` on the connection, inline on the loop thread, else posted (in call order).
  template <typename Fn>
  void Run(Fn fn) {
    if (gate_->InLoop()) {
      if (auto conn = conn_.lock()) fn(*conn);
      return;
    }
    gate_->Post([weak = conn_, fn = std::move(fn)]() mutable {
      if (auto conn = weak.lock()) fn(*conn);
    });
  }

  std::weak_ptr<Conn> conn_;
  std::shared_ptr<IoGate> gate_;
  const uint64_t seq_;
  std::shared_ptr<std::atomic<bool>> open_;  // cleared by the Conn when it closes
  std::atomic<bool> ended_{false};
};

bool HeaderSafe(const std::string& s) { return s.find_first_of("\r\n") == std::string::npos; }

// The status line and headers of a streamed answer, or "" when a header is unsafe.
std::string StreamHead(const Response& head, unsigned version, bool chunked, bool keep_alive) {
  std::string out = absl::StrFormat("HTTP/%d.%d %d %s\r\nServer: sluice\r\n", version / 10,
                                    version % 10, head.status,
                                    std::string(bhttp::obsolete_reason(
                                        static_cast<bhttp::status>(head.status))));
  if (!head.content_type.empty()) {
    if (!HeaderSafe(head.content_type)) return "";
    absl::StrAppend(&out, "Content-Type: ", head.content_type, "\r\n");
  }
  for (const auto& [name, value] : head.headers) {
    if (!HeaderSafe(name) || !HeaderSafe(value) || name.empty()) return "";
    absl::StrAppend(&out, name, ": ", value, "\r\n");
  }
  if (chunked) absl::StrAppend(&out, "Transfer-Encoding: chunked\r\n");
  if (!keep_alive) {
    absl::StrAppend(&out, "Connection: close\r\n");
  } else if (version < 11) {
    absl::StrAppend(&out, "Connection: keep-alive\r\n");
  }
  absl::StrAppend(&out, "\r\n");
  return out;
}

void AppendPiece(std::string& out, const std::string& data, bool chunked) {
  if (!chunked) {
    out += data;
    return;
  }
  absl::StrAppend(&out, absl::Hex(data.size()), "\r\n", data, "\r\n");
}

}  // namespace

std::shared_ptr<ResponseStream> MakeConnStream(std::weak_ptr<Conn> conn,
                                               std::shared_ptr<IoGate> gate, uint64_t seq,
                                               Response head) {
  auto stream = std::make_shared<ConnStream>(std::move(conn), std::move(gate), seq);
  stream->Start(std::move(head));
  return stream;
}

void Conn::StartStream(uint64_t seq, Response head, std::shared_ptr<std::atomic<bool>> open) {
  if (state_ != ConnState::kHandling || seq != seq_) {
    open->store(false, std::memory_order_release);
    return;
  }
  if (head.status < 200 || head.status > 999 || head.status == 204 || head.status == 304) {
    open->store(false, std::memory_order_release);
    return Write(ErrorResponse(500, "handler streamed with a bad status"), keep_alive_);
  }
  stream_chunked_ = version_ >= 11;
  if (!stream_chunked_) keep_alive_ = false;  // an unframed body ends with the connection
  std::string wire = StreamHead(head, version_, stream_chunked_, keep_alive_);
  if (wire.empty()) {
    open->store(false, std::memory_order_release);
    return Write(ErrorResponse(500, "handler set a bad header"), keep_alive_);
  }
  state_ = ConnState::kStreaming;
  stream_open_ = std::move(open);
  stream_end_queued_ = false;
  stream_pending_ = std::move(wire);
  if (!head.body.empty()) AppendPiece(stream_pending_, head.body, stream_chunked_);
  StreamFlush();
}

void Conn::StreamWrite(uint64_t seq, std::string data) {
  if (state_ != ConnState::kStreaming || seq != seq_ || stream_end_queued_) return;
  AppendPiece(stream_pending_, data, stream_chunked_);
  StreamFlush();
}

void Conn::StreamEnd(uint64_t seq) {
  if (state_ != ConnState::kStreaming || seq != seq_ || stream_end_queued_) return;
  stream_end_queued_ = true;
  if (stream_chunked_) stream_pending_ += "0\r\n\r\n";
  StreamFlush();
}

void Conn::StreamAbort(uint64_t seq) {
  if (seq != seq_ || (state_ != ConnState::kStreaming && state_ != ConnState::kHandling)) return;
  if (state_ == ConnState::kStreaming && stream_end_queued_) return;  // ended: let it finish
  Close();
}

void Conn::StreamFlush() {
  if (stream_writing_ || state_ != ConnState::kStreaming) return;
  if (stream_pending_.empty()) {
    if (!stream_end_queued_) return;
    stream_open_.reset();
    if (keep_alive_) return ReadHeader();
    return Drain();
  }
  stream_writing_ = true;
  stream_wire_.swap(stream_pending_);
  stream_pending_.clear();
  asio::async_write(socket_, asio::buffer(stream_wire_),
                    [self = shared_from_this()](error_code ec, size_t) {
                      self->OnStreamWritten(ec);
                    });
}

void Conn::OnStreamWritten(error_code ec) {
  stream_writing_ = false;
  if (state_ == ConnState::kClosed) return;
  if (ec) return Close();
  StreamFlush();
}

}  // namespace sluice::runtime::http::internal::server
