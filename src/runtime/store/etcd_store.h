// EtcdStore: the Store on an etcd v3 cluster (`--store etcd://HOST:PORT`), spoken to through
// etcd's JSON gRPC gateway (/v3/kv/range|put|deleterange|txn|compaction, /v3/lease/*, /v3/watch)
// with runtime/http's keep-alive client: no generated protos, no gRPC dependency. Keys and
// values travel base64-encoded. Used by the controller, agents and gateways of a multi-machine
// installation. Thread-safe: every Store method may be called from any thread (each blocks until
// etcd answers, at most `request_timeout`); a StoreWatch is owned by one thread, is fed by the
// store's private I/O thread and must not outlive the store.
#ifndef SLUICE_RUNTIME_STORE_ETCD_STORE_H_
#define SLUICE_RUNTIME_STORE_ETCD_STORE_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "nlohmann/json_fwd.hpp"

#include "runtime/store/store.h"

namespace sluice::runtime {

namespace http {
class Client;
class EventLoop;
struct Endpoint;
}  // namespace http

struct EtcdStoreOptions {
  // Bound on each request (Unavailable/DeadlineExceeded after it).
  absl::Duration request_timeout = absl::Seconds(5);
  // Pause before a watch stream that broke (etcd restarting, a network error) is re-opened from
  // the last revision it delivered.
  absl::Duration watch_retry = absl::Milliseconds(200);
  // A watch stream is re-opened (invisibly to Poll) after this long, bounding each HTTP exchange.
  absl::Duration watch_stream_lifetime = absl::Minutes(10);
};

class EtcdStore final : public Store {
 public:
  // Connects to etcd at `endpoint` ("HOST:PORT") and checks that it answers. Unavailable naming
  // the endpoint when it does not; InvalidArgument for a malformed endpoint.
  static absl::StatusOr<std::unique_ptr<EtcdStore>> Open(const std::string& endpoint,
                                                         const EtcdStoreOptions& options = {});
  ~EtcdStore() override;
  EtcdStore(const EtcdStore&) = delete;
  EtcdStore& operator=(const EtcdStore&) = delete;

  [[nodiscard]] absl::Status Put(std::string key, std::string value) override;
  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) override;
  absl::StatusOr<std::optional<VersionedValue>> GetVersioned(const std::string& key) override;
  [[nodiscard]] absl::Status Delete(const std::string& key) override;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> List(
      const std::string& prefix) override;
  absl::StatusOr<int64_t> PutIf(std::string key, int64_t expected_version,
                                std::string value) override;

  absl::StatusOr<int64_t> Revision() override;
  // etcd counts ttl in whole seconds (rounded up here) and may raise it to its minimum TTL.
  absl::StatusOr<LeaseId> GrantLease(absl::Duration ttl) override;
  [[nodiscard]] absl::Status KeepAlive(LeaseId lease) override;
  [[nodiscard]] absl::Status RevokeLease(LeaseId lease) override;
  absl::StatusOr<int64_t> PutIfLeased(std::string key, int64_t expected_version,
                                      std::string value, LeaseId lease) override;
  absl::StatusOr<int64_t> PutLeased(std::string key, std::string value, LeaseId lease) override;
  [[nodiscard]] absl::Status DeleteIf(const std::string& key, int64_t expected_version) override;
  absl::StatusOr<StoreSnapshot> ListSnapshot(const std::string& prefix) override;
  // Events reach Poll through a background stream; a broken stream is re-opened from the last
  // delivered revision, so Poll fails only when etcd compacted that history (OutOfRange) or
  // rejected the watch.
  absl::StatusOr<std::unique_ptr<StoreWatch>> WatchPrefix(const std::string& prefix,
                                                          int64_t after_revision) override;

  // Discards etcd's history up to `revision` (operators, tests of OutOfRange).
  [[nodiscard]] absl::Status Compact(int64_t revision);
  const std::string& endpoint() const { return endpoint_; }

 private:
  class Watch;
  EtcdStore(std::string endpoint, const EtcdStoreOptions& options);

  // POSTs `body` to `path` and returns etcd's JSON answer; a gRPC error from etcd becomes the
  // matching Status naming the endpoint, the path and etcd's message.
  absl::StatusOr<nlohmann::json> Call(const char* path, const nlohmann::json& body);
  // A txn writing `key` (if its version is `expected`, or always when `expected` < 0) and
  // reading it back; returns the new version or FailedPrecondition naming both versions.
  absl::StatusOr<int64_t> PutTxn(const std::string& key, int64_t expected,
                                 const std::string& value, LeaseId lease);
  absl::StatusOr<StoreSnapshot> Range(const std::string& key, const std::string& range_end);

  const std::string endpoint_;
  const EtcdStoreOptions options_;
  std::unique_ptr<http::Endpoint> target_;
  std::unique_ptr<http::EventLoop> loop_;  // the I/O thread of every request and watch stream
  std::unique_ptr<http::Client> client_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_STORE_ETCD_STORE_H_
