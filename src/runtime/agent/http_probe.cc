// HttpProbe over http::Client; a stats body without an integer "in_flight" is an error.
#include "runtime/agent/http_probe.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

http::Request Get(const char* target) {
  http::Request r;
  r.method = "GET";
  r.target = target;
  return r;
}

}  // namespace

void HttpProbe::CheckReady(int port, absl::AnyInvocable<void(bool ready)> done) {
  client_.Send({"127.0.0.1", port}, Get("/v2/health/ready"), timeout_,
               [done = std::move(done)](absl::StatusOr<http::Response> r) mutable {
                 done(r.ok() && r->status == 200);
               });
}

void HttpProbe::InFlight(int port, absl::AnyInvocable<void(absl::StatusOr<int64_t>)> done) {
  client_.Send({"127.0.0.1", port}, Get("/sluice/v1/stats"), timeout_,
               [done = std::move(done)](absl::StatusOr<http::Response> r) mutable {
                 if (!r.ok()) return done(r.status());
                 if (r->status != 200) return done(absl::UnavailableError("stats not served"));
                 nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
                 if (j.is_discarded() || !j.is_object() || !j.contains("in_flight") ||
                     !j["in_flight"].is_number_integer()) {
                   return done(absl::InvalidArgumentError("stats without in_flight"));
                 }
                 done(j["in_flight"].get<int64_t>());
               });
}

}  // namespace sluice::runtime
