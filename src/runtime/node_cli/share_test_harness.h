// Test-only helpers of the share-test tests (share_test_test.cc, share_test_time_quota_test.cc):
// the emulated device with the real interception library, and a Harness holding a token server
// and its registration socket on a private emulated GPU, with sluice-spin workers. Not
// thread-safe; one per test.
#ifndef SLUICE_RUNTIME_NODE_CLI_SHARE_TEST_HARNESS_H_
#define SLUICE_RUNTIME_NODE_CLI_SHARE_TEST_HARNESS_H_

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "runtime/agent/controller_factory.h"
#include "runtime/agent/registration_server.h"
#include "runtime/agent/spin_calibration.h"
#include "runtime/agent/token_server.h"
#include "runtime/common/loop_env.h"
#include "runtime/common/subprocess.h"
#include "runtime/node_cli/share_test.h"
#include "runtime/node_cli/worker_env.h"

namespace sluice::runtime {

inline ShareTestOptions Emulated() {
  ShareTestOptions o;
  o.device = "emulated";
  return o;
}

// The emulated device and the interception library, or a reason to skip.
inline std::unique_ptr<WorkerEnv> EmulatedEnv(const ShareTestOptions& o, std::string* why) {
  auto env = WorkerEnv::Create(o);
  if (!env.ok()) {
    *why = std::string(env.status().message());
    return nullptr;
  }
  if (access((*env)->intercept_lib().c_str(), F_OK) != 0) {
    *why = "libsluice_cuda.so not built";
    return nullptr;
  }
  return std::move(*env);
}

// A token server (Dilu's controller) with its socket on a private emulated device, and
// workers under the interception library. The emulated device runs 108 SMs x 100 us blocks:
// 1.08 M blocks/s; the server hands out 90 % of that.
class Harness {
 public:
  static constexpr int64_t kMaxTokens = 108 * 50 * 9 / 10;  // per 5 ms period

  // Empty when the emulated device or the interception library is missing (`why` says which).
  static std::unique_ptr<Harness> Make(std::string* why) {
    std::unique_ptr<WorkerEnv> env = EmulatedEnv(Emulated(), why);
    if (env == nullptr) return nullptr;
    auto h = std::unique_ptr<Harness>(new Harness);
    h->env = std::move(env);
    auto probe = h->env->Spawn({"--probe"}, false);
    auto p = probe.ok() ? ReadSpinEvent(**probe, "probe", absl::Seconds(30)) : probe.status();
    if (!p.ok()) {
      *why = std::string(p.status().message());
      return nullptr;
    }
    h->uuid = p->value("uuid", std::string());
    h->env->set_gpu_uuid(h->uuid);
    h->loop = *LoopEnv::Create();
    TokenServerConfig c;
    c.gpu_uuid = h->uuid;
    c.max_tokens = kMaxTokens;
    const char* ctl = std::getenv("SLUICE_TEST_CONTROLLER");  // to check a test can fail
    h->server = *TokenServer::Create(*h->loop, c,
                                     *MakeGpuController(ctl != nullptr ? ctl : "dilu", c.period));
    h->loop->RunSync([&] { h->server->Start(); });
    RegistrationOptions ro;
    ro.socket_path = h->env->socket_path();
    h->reg = *RegistrationServer::Create(*h->loop, ro);
    h->reg->AddGpu(*h->server);
    return h;
  }
  ~Harness() {
    reg.reset();
    server->Stop();
    loop->Stop();
  }
  void Spec(int64_t instance, double request, double limit, bool slo, double time_quota = 1.0) {
    InstanceSpec s;
    s.quota = {request, limit, time_quota};
    s.slo_sensitive = slo;
    ASSERT_TRUE(server->SetInstanceSpec(common::InstanceId(instance), s).ok());
  }
  // A worker counting the blocks that complete in [from, until] (offsets from `t0`).
  std::unique_ptr<Subprocess> Worker(int64_t instance, absl::Time t0, absl::Duration from,
                                     absl::Duration until) {
    auto w = env->Spawn({"--block-ns", "100000", "--from-ns",
                         std::to_string(ToMonotonicNanos(t0 + from)), "--until-ns",
                         std::to_string(ToMonotonicNanos(t0 + until))},
                        /*preload=*/true, instance);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? std::move(*w) : nullptr;
  }
  static int64_t Blocks(Subprocess& w) {
    auto r = ReadSpinEvent(w, "result", absl::Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r.ok() && r->value("late_start", false)) << "worker missed its window";
    return r.ok() ? r->value("blocks", int64_t{0}) : -1;
  }

  std::unique_ptr<WorkerEnv> env;
  std::string uuid;
  std::unique_ptr<LoopEnv> loop;
  std::unique_ptr<TokenServer> server;
  std::unique_ptr<RegistrationServer> reg;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_NODE_CLI_SHARE_TEST_HARNESS_H_
