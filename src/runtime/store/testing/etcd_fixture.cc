// EtcdProcess: posix_spawn of etcd with a one-member cluster on two free ports, readiness by
// polling /health. Short heartbeat and election timeouts (10 ms / 100 ms) make the one member
// lead at once and let leases of 1 s be granted as asked.
#include "runtime/store/testing/etcd_fixture.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "runtime/http/http.h"

namespace sluice::runtime {
namespace {

// A port that was free a moment ago (the kernel's pick for port 0).
absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return absl::UnavailableError("etcd fixture: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  if (port == 0)
    return absl::UnavailableError("etcd fixture: no free port on 127.0.0.1");
  return port;
}

}  // namespace

std::string EtcdProcess::Binary() {
  const char* env = getenv("SLUICE_ETCD");
  return env != nullptr && *env != '\0' ? env : "/usr/bin/etcd";
}

std::string EtcdProcess::Missing() {
  const std::string bin = Binary();
  if (access(bin.c_str(), X_OK) == 0)
    return "";
  return absl::StrCat("etcd not found at ", bin,
                      " (apt-get install etcd-server, or set SLUICE_ETCD); skipping etcd tests");
}

absl::StatusOr<std::unique_ptr<EtcdProcess>> EtcdProcess::Start(absl::Duration ready_timeout) {
  if (std::string missing = Missing(); !missing.empty())
    return absl::FailedPreconditionError(missing);
  std::unique_ptr<EtcdProcess> etcd(new EtcdProcess());
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                                  "/sluice_etcd_XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr)
    return absl::UnavailableError(absl::StrCat("etcd fixture: mkdtemp ", tmpl, " failed"));
  etcd->dir_ = tmpl;
  SLUICE_ASSIGN_OR_RETURN(etcd->client_port_, FreePort());
  SLUICE_ASSIGN_OR_RETURN(etcd->peer_port_, FreePort());
  while (etcd->peer_port_ == etcd->client_port_) {
    SLUICE_ASSIGN_OR_RETURN(etcd->peer_port_, FreePort());
  }
  SLUICE_RETURN_IF_ERROR(etcd->Launch(ready_timeout));
  return etcd;
}

EtcdProcess::~EtcdProcess() {
  process_.reset();  // SIGKILL and reap
  if (!dir_.empty())
    (void)std::system(absl::StrCat("rm -rf '", dir_, "'").c_str());
}

std::string EtcdProcess::endpoint() const {
  return absl::StrCat("127.0.0.1:", client_port_);
}

int EtcdProcess::pid() const {
  return process_ != nullptr ? process_->pid() : 0;
}

void EtcdProcess::Kill() {
  process_.reset();
}

absl::Status EtcdProcess::Restart(absl::Duration ready_timeout) {
  process_.reset();
  return Launch(ready_timeout);
}

absl::Status EtcdProcess::Launch(absl::Duration ready_timeout) {
  const std::string client = absl::StrCat("http://127.0.0.1:", client_port_);
  const std::string peer = absl::StrCat("http://127.0.0.1:", peer_port_);
  SpawnOptions spawn;
  spawn.argv = {Binary(),
                "--name=sluice-test",
                "--data-dir=" + dir_ + "/data",
                "--listen-client-urls=" + client,
                "--advertise-client-urls=" + client,
                "--listen-peer-urls=" + peer,
                "--initial-advertise-peer-urls=" + peer,
                "--initial-cluster=sluice-test=" + peer,
                "--heartbeat-interval=10",
                "--election-timeout=100"};
  spawn.capture_stdout = false;
  spawn.discard_stderr = true;
  SLUICE_ASSIGN_OR_RETURN(process_, Subprocess::Spawn(spawn));
  const absl::Time deadline = absl::Now() + ready_timeout;
  absl::Status last = absl::UnavailableError("not probed");
  while (absl::Now() < deadline) {
    absl::StatusOr<http::Response> health =
        http::Get(client + "/health", absl::Milliseconds(500));
    if (health.ok() && health->status == 200 && absl::StrContains(health->body, "true"))
      return absl::OkStatus();
    last = health.ok() ? absl::UnavailableError(health->body) : health.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  process_.reset();
  return absl::UnavailableError(absl::StrCat("etcd fixture: etcd on ", endpoint(), " (peer ",
                                             peer_port_, ", data ", dir_, ") not ready within ",
                                             absl::FormatDuration(ready_timeout), ": ",
                                             last.message()));
}

}  // namespace sluice::runtime
