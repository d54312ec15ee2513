// The Boost-free parts of runtime/http: Request accessors, JSON error bodies, Responder, Endpoint
// and URL parsing.
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "runtime/http/http.h"
#include "runtime/http/url.h"

namespace sluice::runtime::http {
namespace {

const std::string* FindPair(const std::vector<std::pair<std::string, std::string>>& pairs,
                            const std::string& name, bool ignore_case) {
  for (const auto& [k, v] : pairs) {
    if (ignore_case ? absl::EqualsIgnoreCase(k, name) : k == name) return &v;
  }
  return nullptr;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string Request::header(const std::string& name) const {
  const std::string* v = FindPair(headers, name, /*ignore_case=*/true);
  return v ? *v : std::string();
}

std::string Request::param(const std::string& name) const {
  const std::string* v = FindPair(params, name, /*ignore_case=*/false);
  return v ? *v : std::string();
}

std::string Request::query_param(const std::string& name) const {
  for (absl::string_view part : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(part, absl::MaxSplits('=', 1));
    if (internal::PercentDecode(kv.first, true) == name) {
      return internal::PercentDecode(kv.second, true);
    }
  }
  return "";
}

Response ErrorResponse(int status, const std::string& message) {
  nlohmann::json body = {{"error", {{"code", status}, {"message", message}}}};
  // `replace`: a message carrying invalid UTF-8 (a bad request echoed back) must not throw.
  return JsonResponse(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Response JsonResponse(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Responder::~Responder() {
  if (send_) {
    auto send = std::move(send_);
    send_ = nullptr;
    send(ErrorResponse(500, "handler dropped the request"));
  }
}

void Responder::operator()(Response response) {
  if (!send_) return;  // answered already, or default-constructed
  auto send = std::move(send_);
  send_ = nullptr;
  start_stream_ = nullptr;
  send(std::move(response));
}

namespace {

// The stream of a Responder that cannot stream: collects the pieces, sends one Response at End.
class BufferedStream : public ResponseStream {
 public:
  BufferedStream(Response head, absl::AnyInvocable<void(Response)> send)
      : head_(std::move(head)), send_(std::move(send)) {}
  ~BufferedStream() override {
    if (send_) send_(ErrorResponse(500, "handler dropped the stream"));
  }
  void Write(std::string data) override {
    absl::MutexLock lock(&mu_);
    if (send_) head_.body += data;
  }
  void End() override {
    absl::AnyInvocable<void(Response)> send;
    Response whole;
    {
      absl::MutexLock lock(&mu_);
      send = std::move(send_);
      send_ = nullptr;
      whole = std::move(head_);
    }
    if (send) send(std::move(whole));
  }
  bool open() const override {
    absl::MutexLock lock(&mu_);
    return send_ != nullptr;
  }

 private:
  mutable absl::Mutex mu_;
  Response head_ ABSL_GUARDED_BY(mu_);
  absl::AnyInvocable<void(Response)> send_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::shared_ptr<ResponseStream> Responder::Stream(Response head) {
  auto send = std::move(send_);
  send_ = nullptr;
  auto start = std::move(start_stream_);
  start_stream_ = nullptr;
  if (start) return start(std::move(head));
  const bool used = !send;
  auto stream = std::make_shared<BufferedStream>(std::move(head), std::move(send));
  if (used) stream->End();  // closed from the start
  return stream;
}

absl::StatusOr<Endpoint> Endpoint::Parse(const std::string& url) {
  absl::string_view s = url;
  absl::ConsumePrefix(&s, "http://");
  absl::ConsumeSuffix(&s, "/");
  auto bad = [&url](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("bad endpoint '", url, "': ", why,
                                                   " (want host:port or http://host:port)"));
  };
  Endpoint e;
  absl::string_view port;
  if (absl::ConsumePrefix(&s, "[")) {  // [v6-address]:port
    const size_t close = s.find(']');
    if (close == absl::string_view::npos || s.substr(close + 1, 1) != ":") {
      return bad("unterminated [address]");
    }
    e.host = std::string(s.substr(0, close));
    port = s.substr(close + 2);
  } else {
    const size_t colon = s.rfind(':');
    if (colon == absl::string_view::npos) return bad("no port");
    e.host = std::string(s.substr(0, colon));
    port = s.substr(colon + 1);
  }
  if (e.host.empty()) return bad("empty host");
  if (e.host.find_first_of("/?# ") != std::string::npos) return bad("path or space in host");
  if (!absl::SimpleAtoi(port, &e.port) || e.port < 1 || e.port > 65535) {
    return bad("port must be 1..65535");
  }
  return e;
}

std::string Endpoint::ToString() const {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

namespace internal {

std::string PercentDecode(absl::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%' && i + 2 < in.size()) {
      const int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

void SplitTarget(Request& req) {
  const size_t q = req.target.find('?');
  absl::string_view target = req.target;
  req.path = PercentDecode(target.substr(0, q), /*plus_is_space=*/false);
  req.query = q == std::string::npos ? "" : std::string(target.substr(q + 1));
}

absl::StatusOr<std::pair<Endpoint, std::string>> ParseUrl(const std::string& url) {
  absl::string_view s = url;
  absl::ConsumePrefix(&s, "http://");
  const size_t slash = s.find_first_of("/?");
  auto endpoint = Endpoint::Parse(std::string(s.substr(0, slash)));
  if (!endpoint.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad url '", url, "': ", endpoint.status().message()));
  }
  absl::string_view rest = slash == absl::string_view::npos ? "" : s.substr(slash);
  std::string target = absl::StartsWith(rest, "/") ? std::string(rest) : absl::StrCat("/", rest);
  return std::make_pair(*std::move(endpoint), std::move(target));
}

}  // namespace internal
}  // namespace sluice::runtime::http
