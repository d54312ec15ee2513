// ProcessPool: spawn, readiness by connecting to the control socket, claim, reap, refill.
#include "runtime/agent/process_pool.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

#include "nlohmann/json.hpp"
#include "runtime/common/log.h"

namespace sluice::runtime {
namespace {

// A connected stream socket to `path`, or -1. A listening socket accepts the connection into
// its backlog at once, so this does not wait for the process to call accept().
int Connect(const std::string& path) {
  sockaddr_un a{};
  if (path.size() >= sizeof(a.sun_path))
    return -1;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

void Kill(const PooledProcess& p) {
  SignalProcessGroup(p.pid, SIGKILL);
  while (!TryReap(p.pid).has_value())
    usleep(1000);
  unlink(p.socket.c_str());
}

}  // namespace

absl::Status SendAssignment(const std::string& socket_path,
                            const std::vector<std::pair<std::string, std::string>>& env) {
  const int fd = Connect(socket_path);
  if (fd < 0)
    return absl::UnavailableError("pool process not listening at " + socket_path);
  nlohmann::json j;
  j["env"] = nlohmann::json::array();
  for (const auto& [k, v] : env)
    j["env"].push_back({k, v});
  const bool ok = WriteAll(fd, j.dump());
  close(fd);  // EOF ends the message
  if (!ok)
    return absl::UnavailableError("pool process hung up at " + socket_path);
  return absl::OkStatus();
}

ProcessPool::ProcessPool(common::Env& env, ProcessPoolOptions options)
    : env_(env), options_(std::move(options)), next_id_(options_.first_pool_id) {
  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  if (ec)
    LogError("agent", "process pool dir ", options_.dir, ": ", ec.message());
  absl::MutexLock lock(&mu_);
  timer_ = env_.RunAt(env_.Now() + options_.refill_interval, [this] { Tick(); });
}

ProcessPool::~ProcessPool() {
  StopAll();
}

void ProcessPool::Want(const std::string& gpu_uuid, const ProcessSpec& base,
                       const std::string& flavor) {
  if (options_.per_gpu <= 0 || base.argv.empty())
    return;
  absl::MutexLock lock(&mu_);
  const Key key{gpu_uuid, base.argv, flavor};
  if (!runtimes_.contains(key) && static_cast<int>(runtimes_.size()) >= options_.max_runtimes) {
    auto oldest = runtimes_.begin();
    for (auto it = runtimes_.begin(); it != runtimes_.end(); ++it) {
      if (it->second.wanted_seq < oldest->second.wanted_seq)
        oldest = it;
    }
    for (const PooledProcess& p : oldest->second.procs)
      Kill(p);
    runtimes_.erase(oldest);
  }
  Runtime& rt = runtimes_[key];
  rt.base = base;  // the latest environment of the runtime on this GPU
  rt.wanted_seq = ++seq_;
}

absl::StatusOr<PooledProcess> ProcessPool::Claim(
    const std::string& gpu_uuid, const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& env, const std::string& flavor) {
  absl::MutexLock lock(&mu_);
  auto it = runtimes_.find(Key{gpu_uuid, argv, flavor});
  if (it != runtimes_.end()) {
    it->second.wanted_seq = ++seq_;
    std::deque<PooledProcess>& procs = it->second.procs;
    for (auto p = procs.begin(); p != procs.end(); ++p) {
      if (!SendAssignment(p->socket, env).ok())
        continue;  // still initialising, or gone
      PooledProcess claimed = *p;
      procs.erase(p);
      ++stats_.claims;
      return claimed;
    }
  }
  ++stats_.misses;
  return absl::NotFoundError("no pre-started process ready for this runtime on " + gpu_uuid);
}

void ProcessPool::Tick() {
  std::vector<PooledProcess> spawned;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_)
      return;
    spawned = RefillLocked();
    timer_ = env_.RunAt(env_.Now() + options_.refill_interval, [this] { Tick(); });
  }
  if (options_.on_spawn) {
    for (const PooledProcess& p : spawned)
      options_.on_spawn(p);
  }
}

std::vector<PooledProcess> ProcessPool::RefillLocked() {
  std::vector<PooledProcess> spawned;
  const absl::Time now = env_.Now();
  for (auto& [key, rt] : runtimes_) {
    for (auto p = rt.procs.begin(); p != rt.procs.end();) {
      if (now - p->spawned > options_.start_timeout && access(p->socket.c_str(), F_OK) != 0) {
        LogWarning("agent", "runtime ", key.argv[0], " did not enter pool mode within ",
                   absl::FormatDuration(options_.start_timeout), " (log ", p->log_path,
                   "): not pooled");
        Kill(*p);
        rt.unpoolable = true;
        p = rt.procs.erase(p);
      } else if (std::optional<int> code = TryReap(p->pid)) {
        LogWarning("agent", "pooled process ", p->pool_id, " exited with code ", *code, " (log ",
                   p->log_path, ")");
        // Exiting before it ever listened: the program has no pool mode (or fails at start).
        if (access(p->socket.c_str(), F_OK) != 0)
          rt.unpoolable = true;
        unlink(p->socket.c_str());
        ++stats_.died;
        p = rt.procs.erase(p);
      } else {
        ++p;
      }
    }
    // One spawn per runtime per tick: a runtime that dies at start cannot spin the node.
    if (!rt.unpoolable && static_cast<int>(rt.procs.size()) < options_.per_gpu) {
      if (std::optional<PooledProcess> p = SpawnLocked(key, rt)) {
        rt.procs.push_back(*p);
        spawned.push_back(*p);
      }
    }
  }
  return spawned;
}

std::optional<PooledProcess> ProcessPool::SpawnLocked(const Key& key, const Runtime& rt) {
  PooledProcess p;
  p.pool_id = next_id_++;
  p.gpu_uuid = key.gpu;
  p.socket = absl::StrCat(options_.dir, "/", p.pool_id, ".sock");
  p.log_path = absl::StrCat(options_.dir, "/", p.pool_id, ".log");
  unlink(p.socket.c_str());
  ProcessSpec spec = rt.base;
  spec.log_path = p.log_path;
  spec.env.emplace_back("SLUICE_POOL_SOCKET", p.socket);
  spec.env.emplace_back("SLUICE_INSTANCE_ID", std::to_string(p.pool_id));
  absl::StatusOr<pid_t> pid = SpawnProcess(spec);
  if (!pid.ok()) {
    LogError("agent", "process pool: ", pid.status().message());
    return std::nullopt;
  }
  p.pid = *pid;
  p.spawned = env_.Now();
  ++stats_.spawned;
  return p;
}

void ProcessPool::StopAll() {
  std::vector<PooledProcess> procs;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    if (timer_ != 0)
      env_.Cancel(timer_);
    timer_ = 0;
    for (auto& [key, rt] : runtimes_) {
      procs.insert(procs.end(), rt.procs.begin(), rt.procs.end());
      rt.procs.clear();
    }
  }
  for (const PooledProcess& p : procs)
    Kill(p);
}

ProcessPool::Stats ProcessPool::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = stats_;
  for (const auto& [key, rt] : runtimes_)
    s.idle += static_cast<int64_t>(rt.procs.size());
  s.runtimes = static_cast<int64_t>(runtimes_.size());
  return s;
}

}  // namespace sluice::runtime
