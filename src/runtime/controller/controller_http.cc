// ControllerCore: the routes of the admin and internal APIs (docs/platform.md). Handlers run on the
// loop thread and answer at once, except DELETE, which answers once the drains are under way.
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "runtime/controller/controller_core.h"

namespace sluice::runtime {

http::Router ControllerCore::MakeRouter() {
  http::Router r;
  // With several controllers only the leader acts; a follower answers the calls below 503,
  // naming the leader (controller_cluster.cc). Without `elect` the gate is always open.
  auto handle = [this, &r](const char* method, const char* pattern, http::Handler h) {
    r.Handle(method, pattern,
             [this, h = std::move(h)](http::Request& req, http::Responder respond) {
               if (!Acting()) {
                 respond(NotLeader());
                 return;
               }
               h(req, std::move(respond));
             });
  };
  r.Handle("GET", "/admin/v1/nodes",
           [this](http::Request&, http::Responder respond) { respond(Nodes()); });
  r.Handle("GET", "/admin/v1/leader",
           [this](http::Request&, http::Responder respond) { respond(Leader()); });
  handle("POST", "/admin/v1/functions",
           [this](http::Request& req, http::Responder respond) { respond(Deploy(req.body)); });
  handle("GET", "/admin/v1/functions",
           [this](http::Request&, http::Responder respond) { respond(List()); });
  handle("GET", "/admin/v1/functions/{name}",
           [this](http::Request& req, http::Responder respond) {
             respond(Describe(req.param("name")));
           });
  handle("DELETE", "/admin/v1/functions/{name}",
           [this](http::Request& req, http::Responder respond) {
             Delete(req.param("name"), std::move(respond));
           });
  handle("PUT", "/admin/v1/functions/{name}/scale",
           [this](http::Request& req, http::Responder respond) {
             respond(Scale(req.param("name"), req.body));
           });
  handle("POST", "/admin/v1/functions/{name}/mutate",
           [this](http::Request& req, http::Responder respond) {
             MutateApi(req.param("name"), req.body, std::move(respond));
           });
  handle("GET", "/admin/v1/cluster",
           [this](http::Request&, http::Responder respond) { respond(Cluster()); });
  handle("GET", "/internal/v1/routes",
           [this](http::Request&, http::Responder respond) { respond(Routes()); });
  handle("POST", "/internal/v1/load",
           [this](http::Request& req, http::Responder respond) { respond(Load(req.body)); });
  handle("POST", "/internal/v1/wake",
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
