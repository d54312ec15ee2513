// ProcessPool: the node agent's pre-started runtime processes (issue 13 item 3; protocol and
// figures in docs/platform.md "Cold starts"). For each (GPU, runtime) the agent keeps `per_gpu`
// processes exec'd with the runtime's argv and the GPU's environment, initialised by the SDK's
// pool mode (driver context set up) and waiting on a Unix control socket; a cold start claims
// one and writes it the instance's environment (Claim), so no process start sits on its critical
// path, and the pool refills in the background (its own tick on the agent's loop). A runtime is
// the expanded argv of an instance command: the agent starts keeping one warm on a GPU after its
// first instance there (Want), or at start (AgentOptions::pool_runtimes).
// Thread safety: every public method may be called from any thread (`mu_` guards the table).
#ifndef SLUICE_RUNTIME_AGENT_PROCESS_POOL_H_
#define SLUICE_RUNTIME_AGENT_PROCESS_POOL_H_

#include <sys/types.h>

#include <compare>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

#include "common/env.h"
#include "runtime/agent/instance_process.h"

namespace sluice::runtime {

// Process states in the pool:
//   spawned (exec'd, initialising; its control socket not yet listening)
//     -> ready (the socket accepts: the runtime is up and waiting)   probed by Claim / the tick
//     -> claimed (the assignment was written; the pool forgets it, the supervisor adopts it)
//   spawned|ready -> gone (it exited: reaped by the tick and replaced; or StopAll killed it)
struct PooledProcess {
  pid_t pid = 0;
  int64_t pool_id = 0;  // SLUICE_INSTANCE_ID it was started with (parked on its GPU)
  std::string gpu_uuid;
  std::string socket;    // its control socket, <dir>/<pool_id>.sock
  std::string log_path;  // <dir>/<pool_id>.log: stdout and stderr, kept after the claim
  absl::Time spawned;    // Env time
};

struct ProcessPoolOptions {
  std::string dir;  // required: control sockets and logs (created)
  int per_gpu = 2;  // processes kept per (GPU, runtime); 0 disables the pool
  absl::Duration refill_interval = absl::Milliseconds(50);
  int64_t first_pool_id = int64_t{1} << 40;  // pool ids count up from here
  // A process whose control socket does not appear within this is killed and its runtime
  // marked as not supporting pool mode (a program that does not use the SDK): never pooled.
  absl::Duration start_timeout = absl::Seconds(20);
  // (GPU, runtime) pairs kept warm at most; wanting one more drops the least recently wanted.
  int max_runtimes = 8;
  // Called (outside the pool's lock) for each process spawned, with its pool id and GPU: the
  // agent parks the pool id on the GPU's token server so an idle runtime never holds a share.
  absl::AnyInvocable<void(const PooledProcess&)> on_spawn;
};

class ProcessPool {
 public:
  // Starts the refill tick on `env` (borrowed; must outlive the pool).
  ProcessPool(common::Env& env, ProcessPoolOptions options);
  ~ProcessPool();  // StopAll()

  // Keep `per_gpu` processes of runtime `base.argv` warm on `gpu_uuid`. `base` is the process
  // spec of an instance of that runtime on that GPU minus the instance's own variables (the
  // pool adds SLUICE_POOL_SOCKET and SLUICE_INSTANCE_ID, and its own log path). Idempotent.
  // `flavor` tells runtimes of one argv apart (the agent passes the function's own environment,
  // which `base` also carries): Claim finds only processes wanted with the same flavor.
  void Want(const std::string& gpu_uuid, const ProcessSpec& base, const std::string& flavor = "");
  // A ready process of runtime `argv` on `gpu_uuid`, handed `env` (the instance's variables,
  // set by the SDK over its own before it reads any): the pool forgets it and the caller owns
  // it (reap it with TryReap). NotFound when none is ready (the caller spawns; the miss is
  // counted and the runtime wanted). A process whose socket refuses is left to the tick.
  absl::StatusOr<PooledProcess> Claim(const std::string& gpu_uuid,
                                      const std::vector<std::string>& argv,
                                      const std::vector<std::pair<std::string, std::string>>& env,
                                      const std::string& flavor = "");
  // SIGKILLs and reaps every pooled process; no refills after it.
  void StopAll();

  struct Stats {
    int64_t idle = 0;      // processes in the pool (spawned or ready)
    int64_t claims = 0;    // cold starts served from the pool
    int64_t misses = 0;    // Claims that found none ready
    int64_t spawned = 0;   // processes ever started
    int64_t died = 0;      // exited while pooled
    int64_t runtimes = 0;  // (GPU, runtime) pairs kept warm
  };
  Stats stats() const;

 private:
  struct Runtime {
    ProcessSpec base;
    std::deque<PooledProcess> procs;
    bool unpoolable = false;  // a process never listened: the program has no pool mode
    uint64_t wanted_seq = 0;  // recency of Want / Claim
  };
  // A runtime: its GPU, argv and flavor (the function's own environment, canonical), so a
  // program that reads its configuration before the hand-off never gets another function's.
  struct Key {
    std::string gpu;
    std::vector<std::string> argv;
    std::string flavor;
    auto operator<=>(const Key&) const = default;
  };

  void Tick();
  // Reaps exited processes and spawns up to per_gpu for each runtime; returns the new ones.
  std::vector<PooledProcess> RefillLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<PooledProcess> SpawnLocked(const Key& key, const Runtime& rt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  common::Env& env_;
  ProcessPoolOptions options_;
  mutable absl::Mutex mu_;
  std::map<Key, Runtime> runtimes_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_);
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
  Stats stats_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  common::Env::TimerId timer_ ABSL_GUARDED_BY(mu_) = 0;
};

// Writes `env` as the pool's assignment message to the control socket at `socket_path`: one
// JSON object {"env": [[name, value], ...]}, then EOF. Unavailable when nothing accepts there.
absl::Status SendAssignment(const std::string& socket_path,
                            const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_PROCESS_POOL_H_
