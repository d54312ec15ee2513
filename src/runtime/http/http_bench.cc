// Round trips through runtime/http: a Client on one EventLoop to a no-op Server on another (the
// shape of gateway -> instance), one request at a time and with 16 in flight. `cpu_us_per_req`
// is the whole process's CPU (client + server + kernel) per round trip, which stays meaningful on
// a shared, loaded machine where wall time does not.
#include <sys/resource.h>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "benchmark/benchmark.h"
#include "common/status.h"
#include "runtime/http/http.h"

namespace sluice::runtime::http {
namespace {

double ProcessCpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

void ReportCpu(benchmark::State& state, double cpu_before) {
  state.SetItemsProcessed(state.iterations());
  if (state.iterations() > 0) {
    state.counters["cpu_us_per_req"] =
        (ProcessCpuSeconds() - cpu_before) * 1e6 / static_cast<double>(state.iterations());
  }
}

struct Rig {
  Rig() {
    auto sl = EventLoop::Create();
    auto cl = EventLoop::Create();
    SLUICE_CHECK(sl.ok() && cl.ok());
    server_loop = *std::move(sl);
    client_loop = *std::move(cl);
    Router router;
    router.Handle("POST", "/v2/models/{name}/infer", [](Request& req, Responder respond) {
      respond(JsonResponse(200, R"({"outputs":[]})"));
    });
    auto s = Server::Start(*server_loop, ServerOptions{}, std::move(router));
    SLUICE_CHECK(s.ok());
    server = *std::move(s);
    client = std::make_unique<Client>(*client_loop);
    to = Endpoint{"127.0.0.1", server->port()};
  }
  Request MakeRequest() const {
    Request req;
    req.method = "POST";
    req.target = "/v2/models/noop/infer";
    req.headers = {{"content-type", "application/json"}};
    req.body = R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]})";
    return req;
  }
  std::unique_ptr<EventLoop> server_loop, client_loop;
  std::unique_ptr<Server> server;
  std::unique_ptr<Client> client;
  Endpoint to;
};

void BM_RoundTripSequential(benchmark::State& state) {
  Rig rig;
  const double cpu_before = ProcessCpuSeconds();
  for (auto _ : state) {
    absl::Notification done;
    bool ok = false;
    rig.client->Send(rig.to, rig.MakeRequest(), absl::Seconds(10),
                     [&](absl::StatusOr<Response> r) {
                       ok = r.ok() && r->status == 200;
                       done.Notify();
                     });
    done.WaitForNotification();
    if (!ok) state.SkipWithError("request failed");
  }
  ReportCpu(state, cpu_before);
}
BENCHMARK(BM_RoundTripSequential)->UseRealTime();

// Closed loop: at most `limit` requests in flight.
struct Window {
  bool HasRoom() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return in_flight < limit; }
  bool Empty() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return in_flight == 0; }
  absl::Mutex mu;
  int limit = 1;
  int in_flight ABSL_GUARDED_BY(mu) = 0;
  int failed ABSL_GUARDED_BY(mu) = 0;
};

// One iteration is one request; up to state.range(0) are in flight.
void BM_RoundTripConcurrent(benchmark::State& state) {
  Rig rig;
  Window w;
  w.limit = static_cast<int>(state.range(0));
  const double cpu_before = ProcessCpuSeconds();
  for (auto _ : state) {
    {
      absl::MutexLock lock(&w.mu);
      w.mu.Await(absl::Condition(&w, &Window::HasRoom));
      ++w.in_flight;
    }
    rig.client->Send(rig.to, rig.MakeRequest(), absl::Seconds(10),
                     [&w](absl::StatusOr<Response> r) {
                       absl::MutexLock lock(&w.mu);
                       --w.in_flight;
                       if (!r.ok() || r->status != 200) ++w.failed;
                     });
  }
  absl::MutexLock lock(&w.mu);
  w.mu.Await(absl::Condition(&w, &Window::Empty));
  if (w.failed > 0) state.SkipWithError("requests failed");
  ReportCpu(state, cpu_before);
}
BENCHMARK(BM_RoundTripConcurrent)->Arg(16)->UseRealTime();

}  // namespace
}  // namespace sluice::runtime::http
