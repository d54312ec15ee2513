// FakeTokenServer: the server side of docs/intercept-protocol.md, reduced to what the
// interception library's tests and benchmark need: it creates a GPU segment, answers hellos on
// a Unix socket (SO_PEERCRED pid recorded), and lets the test drive periods by hand (refill,
// heartbeat, futex wake). Not the real token server (src/runtime/agent). The accept loop runs on
// its own thread; the segment accessors are for the test thread (fields are atomics per protocol).
#ifndef SLUICE_INTERCEPT_TESTING_FAKE_TOKEN_SERVER_H_
#define SLUICE_INTERCEPT_TESTING_FAKE_TOKEN_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "intercept/protocol.h"

namespace sluice::intercept::testing {

struct FakeServerOptions {
  std::string gpu_uuid;     // default: unique per process
  std::string socket_path;  // default: unique under /tmp
  uint32_t slot_count = 4;
  int64_t period_ns = 5 * 1000 * 1000;
  int64_t max_tokens = 1000;
  int64_t initial_budget = 1000;  // budget of a freshly claimed slot
  uint32_t limit_ppm = 1000000;
  uint32_t time_quota_ppm = 0;  // 1.2 slot field; 0 = not written (reads as 1)
  int64_t mem_limit_bytes = 0;
  uint32_t fail_policy = SLUICE_FAIL_OPEN;
  int64_t fail_timeout_ns = 100 * 1000 * 1000;
  uint32_t reject_reason = 0;  // non-zero: reject every hello with this reason
  uint16_t welcome_minor = SLUICE_PROTO_MINOR;  // minor negotiated in welcomes (0: a 1.0 server)
};

class FakeTokenServer {
 public:
  // Creates the segment and starts listening; nullptr (with a message on stderr) on failure.
  static std::unique_ptr<FakeTokenServer> Start(FakeServerOptions options);
  ~FakeTokenServer();

  const std::string& socket_path() const { return socket_path_; }
  const std::string& gpu_uuid() const { return options_.gpu_uuid; }
  SluiceShmHeader* header() const { return header_; }
  SluiceSlot* slot(uint32_t i) const { return SluiceShmSlots(header_) + i; }
  int hellos() const { return hellos_.load(); }
  // pid recorded from SO_PEERCRED for the last welcome.
  int last_peer_pid() const { return last_peer_pid_.load(); }

  // One period for slot `i`: budget = tokens + min(budget, 0) (CAS), stamps, seq++, heartbeat,
  // futex_word++ and FUTEX_WAKE when the slot has waiters.
  void Refill(uint32_t i, int64_t tokens);
  // Heartbeat only.
  void Beat();
  // Sets the heartbeat to a time long past (the server looks dead).
  void Stall();
  // From now on reject every hello with `reason` (0: accept again).
  void RejectAll(uint32_t reason) { reject_reason_.store(reason); }

 private:
  FakeTokenServer() = default;
  bool CreateSegment();
  bool Listen();
  void Serve();
  void Answer(int fd);
  void SendReject(int fd, uint32_t reason);

  FakeServerOptions options_;
  std::string socket_path_;
  std::string shm_name_;
  SluiceShmHeader* header_ = nullptr;
  size_t shm_bytes_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> hellos_{0};
  std::atomic<int> last_peer_pid_{0};
  std::atomic<uint32_t> reject_reason_{0};
  std::vector<int> clients_;  // kept open: a client's EOF would mean it left
  std::thread thread_;
};

// CLOCK_MONOTONIC in ns.
int64_t NowNs();

}  // namespace sluice::intercept::testing

#endif  // SLUICE_INTERCEPT_TESTING_FAKE_TOKEN_SERVER_H_
