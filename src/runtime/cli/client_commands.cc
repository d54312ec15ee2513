// Client verbs over http::Fetch (blocking, one request each). Answers of the daemons are JSON
// (docs/platform.md); error answers {"error": {"message"}} are printed as their message.
#include "runtime/cli/client_commands.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

#include "common/progress_line.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "runtime/cli/daemons_file.h"
#include "runtime/http/http.h"
#include "runtime/loadgen/load_out.h"
#include "runtime/loadgen/load_runner.h"
#include "runtime/loadgen/trace.h"
#include "runtime/spec/function_spec.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;

struct Addresses {
  std::string controller;
  std::string gateway;
};

Addresses Resolve(const ClientFlags& c) {
  absl::StatusOr<std::optional<DaemonsFile>> file =
      ReadDaemonsFile(DaemonsFilePath(ResolveHome(c.home)));
  std::optional<DaemonsFile> f = file.ok() ? *file : std::nullopt;
  return {ClientAddress(c.controller, f, "controller", 7071),
          ClientAddress(c.gateway, f, "gateway", 7070)};
}

absl::StatusOr<http::Response> Call(const std::string& address, const std::string& method,
                                    const std::string& target, std::string body = "",
                                    const std::string& content_type = "application/json") {
  SLUICE_ASSIGN_OR_RETURN(http::Endpoint to, http::Endpoint::Parse(address));
  http::Request req;
  req.method = method;
  req.target = target;
  if (!body.empty())
    req.headers = {{"content-type", content_type}};
  req.body = std::move(body);
  return http::Fetch(to, std::move(req), absl::Seconds(60));
}

// The message of an error answer, else its body.
std::string ErrorMessage(const http::Response& r) {
  const json j = json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("message") && j["error"]["message"].is_string()) {
    return j["error"]["message"].get<std::string>();
  }
  return r.body;
}

// Prints the failure of `what` and returns 1: a transport error or a non-2xx answer.
int Fail(const std::string& verb, const absl::StatusOr<http::Response>& r) {
  if (!r.ok()) {
    std::fprintf(stderr, "sluice %s: %s (is `sluice up` running?)\n", verb.c_str(),
                 std::string(r.status().message()).c_str());
  } else {
    std::fprintf(stderr, "sluice %s: %d: %s\n", verb.c_str(), r->status, ErrorMessage(*r).c_str());
  }
  return 1;
}

bool Ok(const absl::StatusOr<http::Response>& r) {
  return r.ok() && r->status >= 200 && r->status < 300;
}

std::string ProfileCell(const json& f) {
  if (!f.contains("profile") || !f["profile"].is_object())
    return "-";
  const json& p = f["profile"];
  return absl::StrFormat("<%.2f,%.2f>", p.value("request", 0.0), p.value("limit", 0.0));
}

void PrintFunctionLine(const json& f) {
  const json p = f.value("profile", json::object());
  std::printf("function %s: %s%s%s\n", f.value("name", "?").c_str(), f.value("state", "?").c_str(),
              f.value("message", "").empty() ? "" : ": ", f.value("message", "").c_str());
  if (p.is_object() && !p.empty()) {
    std::printf("  profile %s batch %d capacity %.1f req/s latency %.1f ms (%s)\n",
                ProfileCell(f).c_str(), p.value("batch", 0), p.value("capacity_rps", 0.0),
                p.value("latency_ms", 0.0), p.value("source", "").c_str());
  }
}

void PrintTable(const json& functions) {
  std::printf("%-16s %-10s %-10s %-10s %-13s %5s %9s %9s %5s\n", "NAME", "KIND", "POLICY",
              "STATE", "PROFILE", "BATCH", "CAP_RPS", "INST", "COLD");
  for (const json& f : functions) {
    const json p = f.value("profile", json::object());
    const std::string inst =
        absl::StrFormat("%d/%d..%d", f.value("desired", 0), f.value("min", 0), f.value("max", 0));
    std::printf("%-16s %-10s %-10s %-10s %-13s %5d %9.1f %9s %5d\n",
                f.value("name", "?").c_str(), f.value("kind", "?").c_str(),
                f.value("policy", "dilu").c_str(), f.value("state", "?").c_str(),
                ProfileCell(f).c_str(),
                p.is_object() ? p.value("batch", 0) : 0,
                p.is_object() ? p.value("capacity_rps", 0.0) : 0.0, inst.c_str(),
                f.value("cold_starts", 0));
    if (!f.value("message", "").empty())
      std::printf("  message: %s\n", f["message"].get<std::string>().c_str());
    for (const json& i : f.value("instances", json::array())) {
      // A parked (memory-only idle) ready instance shows as "parked".
      std::string state = i.value("state", "?");
      if (state == "ready" && i.value("parked", false))
        state = "parked";
      std::printf(
          "  instance %-4d %-11s gpu %-14s sm_share %.2f <%.2f,%.2f> q %.2f batch %d "
          "in_flight %d restarts %d %s\n",
          i.value("id", 0), state.c_str(), i.value("gpu", "?").c_str(),
          i.value("sm_share", 0.0), i.value("request", 0.0), i.value("limit", 0.0),
          i.value("time_quota", 1.0), i.value("batch", 1), i.value("in_flight", 0),
          i.value("restarts", 0), i.value("url", "").c_str());
    }
  }
}

std::string ReadFileOr(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls the function until it is ready (0) or failed (1), or the timeout passes (1).
int WaitReady(const Addresses& a, const std::string& name, double timeout_s) {
  const absl::Time deadline = absl::Now() + absl::Seconds(timeout_s);
  std::string last;
  while (absl::Now() < deadline) {
    absl::StatusOr<http::Response> r = Call(a.controller, "GET", "/admin/v1/functions/" + name);
    if (!Ok(r))
      return Fail("deploy --wait", r);
    const json f = json::parse(r->body, nullptr, false);
    last = f.is_object() ? f.value("state", "") : "";
    if (last == "ready" || last == "failed") {
      PrintFunctionLine(f);
      return last == "ready" ? 0 : 1;
    }
    absl::SleepFor(absl::Milliseconds(250));
  }
  std::fprintf(stderr, "sluice deploy --wait: %s still '%s' after %.0f s\n", name.c_str(),
               last.c_str(), timeout_s);
  return 1;
}

}  // namespace

int RunDeploy(const ClientFlags& c, const std::string& file, bool wait, double timeout_s) {
  absl::StatusOr<FunctionSpec> spec = LoadFunctionSpec(file);
  if (!spec.ok()) {
    std::fprintf(stderr, "sluice deploy: %s\n", std::string(spec.status().message()).c_str());
    return 2;
  }
  const Addresses a = Resolve(c);
  absl::StatusOr<http::Response> r =
      Call(a.controller, "POST", "/admin/v1/functions", ReadFileOr(file), "application/yaml");
  if (!Ok(r))
    return Fail("deploy", r);
  const json f = json::parse(r->body, nullptr, false);
  if (f.is_object())
    PrintFunctionLine(f);
  return wait ? WaitReady(a, spec->name, timeout_s) : 0;
}

int RunDelete(const ClientFlags& c, const std::string& name) {
  absl::StatusOr<http::Response> r =
      Call(Resolve(c).controller, "DELETE", "/admin/v1/functions/" + name);
  if (!Ok(r))
    return Fail("delete", r);
  std::printf("deleted %s\n", name.c_str());
  return 0;
}

int RunScale(const ClientFlags& c, const std::string& name, std::optional<int> min,
             std::optional<int> max) {
  if (!min && !max) {
    std::fprintf(stderr, "sluice scale: give --min, --max or both\n");
    return 2;
  }
  json body = json::object();
  if (min)
    body["min"] = *min;
  if (max)
    body["max"] = *max;
  absl::StatusOr<http::Response> r =
      Call(Resolve(c).controller, "PUT", "/admin/v1/functions/" + name + "/scale", body.dump());
  if (!Ok(r))
    return Fail("scale", r);
  const json f = json::parse(r->body, nullptr, false);
  if (f.is_object()) {
    std::printf("function %s: min %d max %d desired %d\n", name.c_str(), f.value("min", 0),
                f.value("max", 0), f.value("desired", 0));
  }
  return 0;
}

int RunMutate(const ClientFlags& c, const std::string& name, int64_t instance,
              const std::string& role) {
  const json body{{"instance", instance}, {"role", role}};
  absl::StatusOr<http::Response> r =
      Call(Resolve(c).controller, "POST", "/admin/v1/functions/" + name + "/mutate", body.dump());
  if (!Ok(r))
    return Fail("mutate", r);
  const json a = json::parse(r->body, nullptr, false);
  std::printf("instance %lld of %s: %s -> %s\n", static_cast<long long>(instance), name.c_str(),
              a.value("previous", std::string("?")).c_str(), a.value("role", role).c_str());
  return 0;
}

int RunInvoke(const ClientFlags& c, const std::string& name, const std::string& data) {
  absl::StatusOr<http::Response> r =
      Call(Resolve(c).gateway, "POST", "/v2/models/" + name + "/infer", data);
  if (!Ok(r))
    return Fail("invoke", r);
  std::printf("%s\n", r->body.c_str());
  return 0;
}

// Daemons the supervisor of `sluice up` reports as crash-looping or dead, on stderr (a crash
// loop is reported, not hidden: docs/platform.md "Supervision").
static void WarnAboutDaemons(const ClientFlags& c) {
  absl::StatusOr<std::optional<DaemonsFile>> file =
      ReadDaemonsFile(DaemonsFilePath(ResolveHome(c.home)));
  if (!file.ok() || !file->has_value() || !c.controller.empty())
    return;
  for (const auto& [name, d] : (*file)->daemons) {
    if (d.crash_loop) {
      std::fprintf(stderr,
                   "sluice status: warning: the %s is crash-looping (%d restarts); see %s\n",
                   name.c_str(), d.restarts, d.log.c_str());
    } else if (!DaemonAlive(d.pid, name)) {
      std::fprintf(stderr, "sluice status: warning: the %s is not running (being restarted?)\n",
                   name.c_str());
    }
  }
}

// Several controllers (issue 12): the leader and the nodes (GET /admin/v1/nodes), printed
// before the functions; nothing for a single controller or one that predates the endpoint.
void PrintNodes(const json& doc) {
  const json leader = doc.value("leader", json());
  std::printf("controller %s (%s); leader: %s\n", doc.value("self", "?").c_str(),
              doc.value("role", "?").c_str(),
              leader.is_object() ? absl::StrCat(leader.value("id", "?"), " at ",
                                                leader.value("address", "?")).c_str()
                                 : "none");
  if (!doc.contains("nodes") || !doc["nodes"].is_array() || doc["nodes"].empty())
    return;
  std::printf("%-16s %-22s %5s %-8s %9s\n", "NODE", "ADDRESS", "GPUS", "STATE", "INSTANCES");
  for (const json& n : doc["nodes"]) {
    const json inst = n.value("instances", json());
    std::printf("%-16s %-22s %5s %-8s %9s\n", n.value("id", "?").c_str(),
                n.value("address", "-").c_str(),
                n.contains("gpus") ? n["gpus"].dump().c_str() : "-",
                n.value("state", "?").c_str(), inst.is_number() ? inst.dump().c_str() : "-");
  }
  std::printf("\n");
}

int RunStatus(const ClientFlags& c, bool as_json) {
  WarnAboutDaemons(c);
  const std::string controller = Resolve(c).controller;
  absl::StatusOr<http::Response> r = Call(controller, "GET", "/admin/v1/functions");
  // A follower answers 503 naming the leader: ask the leader instead.
  if (r.ok() && r->status == 503) {
    const json j = json::parse(r->body, nullptr, false);
    if (j.is_object() && j.contains("leader") && j["leader"].is_string())
      r = Call(j["leader"].get<std::string>(), "GET", "/admin/v1/functions");
  }
  if (!Ok(r))
    return Fail("status", r);
  if (as_json) {
    std::printf("%s\n", r->body.c_str());
    return 0;
  }
  if (absl::StatusOr<http::Response> n = Call(controller, "GET", "/admin/v1/nodes"); Ok(n)) {
    const json nodes = json::parse(n->body, nullptr, false);
    if (nodes.is_object() && nodes.value("role", "single") != "single")
      PrintNodes(nodes);  // one machine: the table stays as it was
  }
  const json doc = json::parse(r->body, nullptr, false);
  if (!doc.is_object() || !doc.contains("functions") || !doc["functions"].is_array()) {
    std::fprintf(stderr, "sluice status: unexpected answer: %s\n", r->body.c_str());
    return 1;
  }
  if (doc["functions"].empty()) {
    std::printf("no functions deployed\n");
    return 0;
  }
  PrintTable(doc["functions"]);
  return 0;
}

int RunLoadCommand(const ClientFlags& c, const LoadFlags& f) {
  absl::StatusOr<Trace> trace = LoadTrace(f.trace);
  if (!trace.ok()) {
    std::fprintf(stderr, "sluice load: %s\n", std::string(trace.status().message()).c_str());
    return 2;
  }
  const Addresses a = Resolve(c);
  LoadOptions o;
  o.gateway = a.gateway;
  o.controller = a.controller;
  o.function = f.function;
  o.data = f.data;
  o.duration = f.seconds > 0 ? absl::Seconds(f.seconds) : TraceLength(*trace);
  o.grace = absl::Seconds(f.grace_s);
  o.arrivals = Arrivals(*trace, f.seed, o.duration);
  if (!f.json) {
    std::printf("replaying %s: %zu requests to %s over %.1f s\n", f.trace.c_str(),
                o.arrivals.size(), f.function.c_str(), absl::ToDoubleSeconds(o.duration));
    std::fflush(stdout);
  }
  // A live line on a terminal only: piped or redirected stderr stays quiet.
  std::unique_ptr<common::ProgressLine> line;
  if (isatty(STDERR_FILENO) == 1) {
    line = std::make_unique<common::ProgressLine>(std::cerr);
    o.on_progress = [l = line.get()](const LoadProgress& p) {
      l->Update(absl::Now(), FormatLoadProgress(p));
    };
  }
  absl::StatusOr<LoadReport> report = RunLoad(o);
  if (line != nullptr) line->Finish();
  if (!report.ok()) {
    std::fprintf(stderr, "sluice load: %s\n", std::string(report.status().message()).c_str());
    return absl::IsInvalidArgument(report.status()) ? 2 : 1;
  }
  std::printf("%s\n", f.json ? ReportJson(*report).c_str() : ReportText(*report).c_str());
  if (!f.out_dir.empty()) {
    if (absl::Status s = WriteLoadOutputDir(f.out_dir, *report); !s.ok()) {
      std::fprintf(stderr, "sluice load: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace sluice::runtime
