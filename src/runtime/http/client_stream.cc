// Client::Stream: after the request is written, the answer is parsed with a buffer_body parser
// and async_read_some, so each piece of body reaches on_data as soon as it has been read and
// de-chunked, instead of after the whole message. Connection reuse, retry of a stale pooled
// connection (only before any byte arrived), timeouts and errors are ClientCore's (client.cc).
#include <limits>

#include "runtime/http/client_core.h"

namespace sluice::runtime::http::internal::client {

void ClientCore::ReadStreamed(const std::shared_ptr<Op>& op, const std::shared_ptr<Conn>& conn) {
  if (!conn->stream_parser.has_value()) {
    conn->stream_parser.emplace();
    conn->stream_parser->body_limit(std::numeric_limits<uint64_t>::max());
  }
  auto& body = conn->stream_parser->get().body();
  body.data = op->stream_buffer->data();
  body.size = op->stream_buffer->size();
  bhttp::async_read_some(conn->socket, conn->buffer, *conn->stream_parser,
                         [self = shared_from_this(), op, conn](error_code ec, size_t) {
                           if (op->conn != conn) return;  // ended or retried meanwhile
                           self->OnStreamRead(op, ec);
                         });
}

void ClientCore::OnStreamRead(const std::shared_ptr<Op>& op, error_code ec) {
  if (op->phase != Phase::kExchanging || !op->stream) return;
  if (ec == bhttp::error::need_buffer) ec = {};  // our buffer is full: hand it over, read on
  if (ec) {
    if (!MaybeRetry(op, ec)) Complete(op, Failure(*op, "receive", ec), false);
    return;
  }
  auto& parser = *op->conn->stream_parser;
  if (parser.is_header_done() && !op->head_sent) {
    op->head_sent = true;
    if (op->stream->on_head) op->stream->on_head(HeadOf(parser.get()));
  }
  // A handler may have shut the client down (destroying it on the loop thread).
  if (op->phase != Phase::kExchanging || !op->stream) return;
  const size_t got = op->stream_buffer->size() - parser.get().body().size;
  if (got > 0 && op->stream->on_data) {
    op->stream->on_data(std::string_view(op->stream_buffer->data(), got));
    if (op->phase != Phase::kExchanging || !op->stream) return;
  }
  if (parser.is_done()) {
    const bool keep = parser.get().keep_alive() && !parser.need_eof();
    return Complete(op, Response{}, keep);
  }
  ReadStreamed(op, op->conn);
}

}  // namespace sluice::runtime::http::internal::client
