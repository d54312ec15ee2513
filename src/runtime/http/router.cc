// Router: a linear scan over (method, segments) routes. Daemons register a dozen routes, so a
// scan over pre-split patterns beats a trie on simplicity and is a few hundred ns per request.
#include <algorithm>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/http/http.h"

namespace sluice::runtime::http {
namespace {

bool IsCapture(const std::string& segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

// Matches `path` against `pattern`, appending captures to `params` on success only.
bool Match(const std::vector<std::string>& pattern, const std::vector<absl::string_view>& path,
           std::vector<std::pair<std::string, std::string>>* params) {
  if (pattern.size() != path.size()) return false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (!IsCapture(pattern[i]) && pattern[i] != path[i]) return false;
    if (IsCapture(pattern[i]) && path[i].empty()) return false;
  }
  if (params != nullptr) {
    for (size_t i = 0; i < pattern.size(); ++i) {
      if (IsCapture(pattern[i])) {
        params->emplace_back(pattern[i].substr(1, pattern[i].size() - 2), std::string(path[i]));
      }
    }
  }
  return true;
}

}  // namespace

void Router::Handle(const std::string& method, const std::string& pattern, Handler handler) {
  Route route;
  route.method = method;
  for (absl::string_view s : absl::StrSplit(pattern, '/', absl::SkipEmpty())) {
    route.segments.emplace_back(s);
  }
  route.handler = std::move(handler);
  routes_.push_back(std::move(route));
}

void Router::Dispatch(Request& req, Responder respond) const {
  const std::vector<absl::string_view> path = absl::StrSplit(req.path, '/', absl::SkipEmpty());
  std::vector<std::string> allowed;
  for (const Route& route : routes_) {
    if (route.method != req.method) {
      if (Match(route.segments, path, nullptr) &&
          std::find(allowed.begin(), allowed.end(), route.method) == allowed.end()) {
        allowed.push_back(route.method);
      }
      continue;
    }
    std::vector<std::pair<std::string, std::string>> params;
    if (!Match(route.segments, path, &params)) continue;
    req.params = std::move(params);
    route.handler(req, std::move(respond));
    return;
  }
  if (allowed.empty()) {
    respond(ErrorResponse(404, "no route for " + req.method + " " + req.path));
    return;
  }
  Response r = ErrorResponse(405, "method " + req.method + " not allowed for " + req.path);
  r.headers.emplace_back("allow", absl::StrJoin(allowed, ", "));
  respond(std::move(r));
}

}  // namespace sluice::runtime::http
