// ControllerCore: the routes of the admin and internal APIs (docs/platform.md). Handlers run on the
// loop thread and answer at once, except DELETE, which answers once the drains are under way.
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "runtime/controller/controller_core.h"

namespace sluice::runtime {

http::Router ControllerCore::MakeRouter() {
  http::Router r;
  r.Handle("POST", "/admin/v1/functions",
           [this](http::Request& req, http::Responder respond) { respond(Deploy(req.body)); });
  r.Handle("GET", "/admin/v1/functions",
           [this](http::Request&, http::Responder respond) { respond(List()); });
  r.Handle("GET", "/admin/v1/functions/{name}",
           [this](http::Request& req, http::Responder respond) {
             respond(Describe(req.param("name")));
           });
  r.Handle("DELETE", "/admin/v1/functions/{name}",
           [this](http::Request& req, http::Responder respond) {
             Delete(req.param("name"), std::move(respond));
           });
  r.Handle("PUT", "/admin/v1/functions/{name}/scale",
           [this](http::Request& req, http::Responder respond) {
             respond(Scale(req.param("name"), req.body));
           });
  r.Handle("POST", "/admin/v1/functions/{name}/mutate",
           [this](http::Request& req, http::Responder respond) {
             MutateApi(req.param("name"), req.body, std::move(respond));
           });
  r.Handle("GET", "/admin/v1/cluster",
           [this](http::Request&, http::Responder respond) { respond(Cluster()); });
  r.Handle("GET", "/internal/v1/routes",
           [this](http::Request&, http::Responder respond) { respond(Routes()); });
  r.Handle("POST", "/internal/v1/load",
           [this](http::Request& req, http::Responder respond) { respond(Load(req.body)); });
  r.Handle("POST", "/internal/v1/wake",
           [this](http::Request& req, http::Responder respond) { respond(Wake(req.body)); });
  r.Handle("GET", "/healthz", [](http::Request&, http::Responder respond) {
    respond(http::JsonResponse(200, nlohmann::json{{"ok", true}}.dump()));
  });
  r.Handle("GET", "/metrics", [this](http::Request&, http::Responder respond) {
    http::Response m;
    m.content_type = "text/plain; version=0.0.4";
    m.body = RenderMetrics();
    respond(std::move(m));
  });
  dashboard_->AddRoutes(r, [] { return absl::Now(); });  // /dashboard (dashboard_http.h)
  return r;
}

}  // namespace sluice::runtime
