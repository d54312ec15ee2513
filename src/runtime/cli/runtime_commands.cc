// Flag definitions of the platform verbs; the work is in supervisor.cc, client_commands.cc and
// daemon_commands.cc. Flag structs are shared_ptrs owned by the CLI11 callbacks.
#include "runtime/cli/runtime_commands.h"

#include <unistd.h>

#include <climits>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

#include "runtime/cli/client_commands.h"
#include "runtime/cli/daemon_commands.h"
#include "runtime/cli/daemons_file.h"
#include "runtime/cli/supervisor.h"
#include "runtime/controller/controller_daemon.h"

namespace sluice::cli {
namespace {

using runtime::ClientFlags;

std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}

// This process's arguments after the binary, from /proc/self/cmdline.
std::vector<std::string> SelfArgs() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0'))
    args.push_back(arg);
  if (!args.empty())
    args.erase(args.begin());
  return args;
}

struct UpFlags {
  runtime::UpOptions o;
  std::string home;
  std::string device = "auto";
  int emulated_gpus = 2;
  double lazy_window_s = 0;
  int phi_out = 0;
  int phi_in = 0;
  int load_report_ms = 0;
  std::string default_policy = "sluice";  // the controller's own default, forwarded when given
  double start_timeout_s = 60;
};

// Adds `--name value` to `args` when the user gave the option.
template <typename T>
void Forward(const CLI::App& cmd, const char* name, const T& value,
             std::vector<std::string>& args) {
  if (cmd.count(name) > 0) {
    args.push_back(name);
    args.push_back(absl::StrCat(value));
  }
}

void RegisterUp(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<UpFlags>();
  CLI::App* up = app.add_subcommand(
      "up",
      "start the controller, gateway and node agent on this machine (emulated GPUs when "
      "none is present)");
  up->add_flag("--detach,-d", f->o.detach,
               "start them under a background supervisor (restarts them) and return");
  up->add_flag("--supervise", f->o.supervise, "internal: be --detach's background supervisor")
      ->group("");
  up->add_option("--home", f->home, "state directory (default $SLUICE_HOME or ~/.sluice)");
  up->add_option("--gateway-port", f->o.gateway_port, "0: ephemeral")->capture_default_str();
  up->add_option("--controller-port", f->o.controller_port, "0: ephemeral")->capture_default_str();
  up->add_option("--agent-port", f->o.agent_port, "0: ephemeral")->capture_default_str();
  up->add_option("--device", f->device, "auto | emulated | cuda")->capture_default_str();
  up->add_option("--emulated-gpus", f->emulated_gpus, "emulated GPUs when there is no NVIDIA GPU")
      ->capture_default_str();
  up->add_option("--lazy-window-s", f->lazy_window_s, "controller: lazy scaler window");
  up->add_option("--phi-out", f->phi_out, "controller: high samples that add an instance");
  up->add_option("--phi-in", f->phi_in, "controller: low samples that remove one");
  up->add_option("--load-report-ms", f->load_report_ms, "gateway: load report (sample) period");
  up->add_option("--default-policy", f->default_policy,
                 "controller: policy set of a spec that names no `policy:`")
      ->capture_default_str()
      ->check([](const std::string& v) { return runtime::UnknownPolicyMessage(v); });
  up->add_option("--start-timeout-s", f->start_timeout_s, "per daemon")->capture_default_str();
  up->add_option("--store", f->o.store,
                 "controller store URI, e.g. etcd://HOST:PORT (default: <home>/controller.db)");
  up->callback([f, up, &exit_code] {
    runtime::UpOptions& o = f->o;
    o.home = runtime::ResolveHome(f->home);
    o.self_exe = SelfExe();
    o.argv = SelfArgs();
    o.start_timeout = absl::Seconds(f->start_timeout_s);
    o.agent_args = {"--device", f->device, "--emulated-gpus", absl::StrCat(f->emulated_gpus)};
    Forward(*up, "--lazy-window-s", f->lazy_window_s, o.controller_args);
    Forward(*up, "--phi-out", f->phi_out, o.controller_args);
    Forward(*up, "--phi-in", f->phi_in, o.controller_args);
    Forward(*up, "--load-report-ms", f->load_report_ms, o.gateway_args);
    Forward(*up, "--default-policy", f->default_policy, o.controller_args);
    exit_code = runtime::RunUp(o);
  });
  auto home = std::make_shared<std::string>();
  CLI::App* down = app.add_subcommand("down",
                                      "stop what `sluice up` started (exit 1 when "
                                      "nothing is running)");
  down->add_option("--home", *home, "state directory");
  down->callback([home, &exit_code] {
    exit_code = runtime::RunDown(runtime::ResolveHome(*home), absl::Seconds(5));
  });
}

void AddClientFlags(CLI::App& cmd, ClientFlags& c) {
  cmd.add_option("--home", c.home, "state directory whose run/daemons.json names the daemons");
  cmd.add_option("--controller", c.controller, "controller host:port (overrides --home)");
  cmd.add_option("--gateway", c.gateway, "gateway host:port (overrides --home)");
}

void RegisterClientVerbs(CLI::App& app, int& exit_code) {
  struct Flags {
    ClientFlags c;
    std::string file, name, data;
    bool wait = false, json = false;
    double timeout_s = 300;
    std::optional<int> min, max;
    int64_t instance = 0;
    std::string role;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* deploy = app.add_subcommand("deploy", "validate a function spec and deploy it");
  deploy->add_option("file", f->file, "function spec YAML")->required();
  deploy->add_flag("--wait", f->wait, "wait until the function is ready (exit 0) or failed (1)");
  deploy->add_option("--timeout-s", f->timeout_s, "for --wait")->capture_default_str();
  AddClientFlags(*deploy, f->c);
  deploy->callback(
      [f, &exit_code] { exit_code = runtime::RunDeploy(f->c, f->file, f->wait, f->timeout_s); });

  CLI::App* del = app.add_subcommand("delete", "delete a function (its instances are drained)");
  del->add_option("name", f->name)->required();
  AddClientFlags(*del, f->c);
  del->callback([f, &exit_code] { exit_code = runtime::RunDelete(f->c, f->name); });

  CLI::App* scale = app.add_subcommand("scale", "set a function's instance bounds");
  scale->add_option("name", f->name)->required();
  scale->add_option("--min", f->min, "fewest instances");
  scale->add_option("--max", f->max, "most instances");
  AddClientFlags(*scale, f->c);
  scale->callback(
      [f, &exit_code] { exit_code = runtime::RunScale(f->c, f->name, f->min, f->max); });

  CLI::App* mutate = app.add_subcommand(
      "mutate", "switch an instance of a disaggregated LLM function to prefill or decode");
  mutate->add_option("name", f->name)->required();
  mutate->add_option("--instance", f->instance, "instance id (sluice status)")->required();
  mutate->add_option("--role", f->role, "prefill or decode")->required();
  AddClientFlags(*mutate, f->c);
  mutate->callback([f, &exit_code] {
    exit_code = runtime::RunMutate(f->c, f->name, f->instance, f->role);
  });

  CLI::App* invoke = app.add_subcommand("invoke", "send one KServe v2 request through the gateway");
  invoke->add_option("name", f->name)->required();
  invoke->add_option("--data", f->data, "request body (KServe v2 JSON)")->required();
  AddClientFlags(*invoke, f->c);
  invoke->callback([f, &exit_code] { exit_code = runtime::RunInvoke(f->c, f->name, f->data); });

  CLI::App* status = app.add_subcommand("status", "functions, profiles and instances");
  status->add_flag("--json", f->json, "the controller's JSON as is");
  AddClientFlags(*status, f->c);
  status->callback([f, &exit_code] { exit_code = runtime::RunStatus(f->c, f->json); });
}

void RegisterLoad(CLI::App& app, int& exit_code) {
  struct Flags {
    ClientFlags c;
    runtime::LoadFlags load;
  };
  auto f = std::make_shared<Flags>();
  runtime::LoadFlags& l = f->load;
  l.data = R"({"inputs":[{"name":"input","shape":[1],"datatype":"FP32","data":[1.0]}]})";
  CLI::App* load = app.add_subcommand("load",
                                      "replay a trace against a function (open loop) "
                                      "and report SVR, latency, cold starts, SM shares");
  load->add_option("name", l.function)->required();
  load->add_option("--trace", l.trace, "CSV: 'time_s' or 'second,rps'")->required();
  load->add_option("--seconds", l.seconds, "stop sending after this (default: the trace)");
  load->add_option("--data", l.data, "request body")->capture_default_str();
  load->add_option("--seed", l.seed, "seed of the Poisson arrivals")->capture_default_str();
  load->add_option("--grace-s", l.grace_s, "wait this long for answers after the last send")
      ->capture_default_str();
  load->add_flag("--json", l.json, "print one JSON object");
  load->add_option("--out", l.out_dir,
                   "write summary.json and a timeline CSV here (`sluice sim plot DIR` draws them)");
  AddClientFlags(*load, f->c);
  load->callback([f, &exit_code] { exit_code = runtime::RunLoadCommand(f->c, f->load); });
}

}  // namespace

void RegisterRuntime(CLI::App& app, int& exit_code) {
  runtime::RegisterControllerCommand(app, exit_code);
  runtime::RegisterGatewayCommand(app, exit_code);
  runtime::RegisterAgentCommand(app, exit_code);
  RegisterUp(app, exit_code);
  RegisterClientVerbs(app, exit_code);
  RegisterLoad(app, exit_code);
}

}  // namespace sluice::cli
