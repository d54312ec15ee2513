// URL pieces shared by runtime/http's server, router and client: percent-decoding, splitting
// a request target, and "http://host:port/path" parsing. Internal to runtime/http; pure
// functions, thread-safe.
#ifndef SLUICE_RUNTIME_HTTP_URL_H_
#define SLUICE_RUNTIME_HTTP_URL_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/http/http.h"

namespace sluice::runtime::http::internal {

// Decodes %XX escapes (malformed ones are kept as is); '+' becomes ' ' when `plus_is_space`
// (query strings), and stays '+' in paths.
std::string PercentDecode(absl::string_view in, bool plus_is_space);

// Fills req.path (decoded) and req.query (raw) from req.target.
void SplitTarget(Request& req);

// "http://host:port/path?q" or "host:port/path?q" -> endpoint and target ("/" when absent).
absl::StatusOr<std::pair<Endpoint, std::string>> ParseUrl(const std::string& url);

}  // namespace sluice::runtime::http::internal

#endif  // SLUICE_RUNTIME_HTTP_URL_H_
