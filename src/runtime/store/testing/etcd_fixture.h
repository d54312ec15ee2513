// EtcdProcess: a real etcd (Debian's etcd-server, /usr/bin/etcd) started by a test on free
// 127.0.0.1 ports with a temporary data directory, for the store's typed suite, its benchmark,
// the controller failover tests and the chaos test. Not thread-safe; one owner.
#ifndef SLUICE_RUNTIME_STORE_TESTING_ETCD_FIXTURE_H_
#define SLUICE_RUNTIME_STORE_TESTING_ETCD_FIXTURE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "runtime/common/subprocess.h"

namespace sluice::runtime {

class EtcdProcess {
 public:
  // The etcd binary: $SLUICE_ETCD if set, else /usr/bin/etcd.
  static std::string Binary();
  // "" when the binary exists; otherwise a message to skip with ("etcd not found at ...;
  // apt-get install etcd-server").
  static std::string Missing();
  // Starts etcd with its data under a fresh temporary directory (removed by the destructor) and
  // waits until it answers, at most `ready_timeout`. Unavailable naming the ports on failure.
  static absl::StatusOr<std::unique_ptr<EtcdProcess>> Start(
      absl::Duration ready_timeout = absl::Seconds(20));
  ~EtcdProcess();  // kills etcd and removes its data
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // "127.0.0.1:PORT" (the client port) and "etcd://127.0.0.1:PORT" (for OpenStore / --store).
  std::string endpoint() const;
  std::string uri() const { return "etcd://" + endpoint(); }
  int pid() const;  // 0 while stopped

  // Kills etcd (SIGKILL), keeping its data: clients see Unavailable until Restart.
  void Kill();
  // Starts etcd again on the same ports and data (after Kill) and waits until it answers.
  [[nodiscard]] absl::Status Restart(absl::Duration ready_timeout = absl::Seconds(20));

 private:
  EtcdProcess() = default;
  [[nodiscard]] absl::Status Launch(absl::Duration ready_timeout);

  std::string dir_;
  int client_port_ = 0;
  int peer_port_ = 0;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_STORE_TESTING_ETCD_FIXTURE_H_
