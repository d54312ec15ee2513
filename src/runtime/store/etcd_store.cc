// EtcdStore: Store calls as blocking POSTs to etcd's JSON gateway over one keep-alive client on a
// private EventLoop. gRPC-gateway conventions: bytes are base64, int64 fields are JSON strings
// (and omitted when zero), errors are {"error", "code" (a gRPC code), "message"}. Thread-safe.
// The watch streams are in etcd_watch.cc.
#include "runtime/store/etcd_store.h"

#include <future>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

#include "common/status.h"
#include "runtime/http/http.h"
#include "runtime/store/etcd_json.h"

namespace sluice::runtime {

using nlohmann::json;
using internal::B64;
using internal::Int64Field;

EtcdStore::EtcdStore(std::string endpoint, const EtcdStoreOptions& options)
    : endpoint_(std::move(endpoint)), options_(options) {}

EtcdStore::~EtcdStore() {
  client_.reset();  // before its loop
  if (loop_ != nullptr)
    loop_->Stop();
}

absl::StatusOr<std::unique_ptr<EtcdStore>> EtcdStore::Open(const std::string& endpoint,
                                                           const EtcdStoreOptions& options) {
  absl::StatusOr<http::Endpoint> parsed = http::Endpoint::Parse(endpoint);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("etcd store: endpoint '", endpoint,
                                                   "' is not HOST:PORT: ",
                                                   parsed.status().message()));
  }
  std::unique_ptr<EtcdStore> store(new EtcdStore(parsed->ToString(), options));
  store->target_ = std::make_unique<http::Endpoint>(*parsed);
  SLUICE_ASSIGN_OR_RETURN(store->loop_, http::EventLoop::Create());
  store->client_ = std::make_unique<http::Client>(*store->loop_);
  SLUICE_RETURN_IF_ERROR(store->Revision().status());
  return store;
}

absl::StatusOr<json> EtcdStore::Call(const char* path, const json& body) {
  http::Request req;
  req.method = "POST";
  req.target = path;
  req.headers = {{"content-type", "application/json"}};
  req.body = body.dump();
  std::promise<absl::StatusOr<http::Response>> answer;
  client_->Send(*target_, std::move(req), options_.request_timeout,
                [&answer](absl::StatusOr<http::Response> r) { answer.set_value(std::move(r)); });
  absl::StatusOr<http::Response> response = answer.get_future().get();
  if (!response.ok()) {
    return absl::Status(response.status().code(),
                        absl::StrCat("etcd store ", endpoint_, " ", path, ": ",
                                     response.status().message()));
  }
  return internal::ParseEtcdAnswer(endpoint_, path, response->status, response->body);
}

absl::StatusOr<StoreSnapshot> EtcdStore::Range(const std::string& key,
                                               const std::string& range_end) {
  json body = {{"key", B64(key)}};
  if (!range_end.empty())
    body["range_end"] = B64(range_end);
  SLUICE_ASSIGN_OR_RETURN(json answer, Call("/v3/kv/range", body));
  StoreSnapshot out;
  out.revision = Int64Field(answer["header"], "revision");
  if (answer.contains("kvs")) {
    for (const json& kv : answer["kvs"]) {
      SLUICE_ASSIGN_OR_RETURN(internal::EtcdKv parsed, internal::ParseKv(kv));
      out.items.emplace_back(std::move(parsed.key),
                             VersionedValue{std::move(parsed.value), parsed.version});
    }
  }
  return out;
}

absl::Status EtcdStore::Put(std::string key, std::string value) {
  return PutLeased(std::move(key), std::move(value), 0).status();
}

absl::StatusOr<std::optional<std::string>> EtcdStore::Get(const std::string& key) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<VersionedValue> v, GetVersioned(key));
  if (!v.has_value())
    return std::optional<std::string>();
  return std::optional<std::string>(std::move(v->value));
}

absl::StatusOr<std::optional<VersionedValue>> EtcdStore::GetVersioned(const std::string& key) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  SLUICE_ASSIGN_OR_RETURN(StoreSnapshot snap, Range(key, ""));
  if (snap.items.empty())
    return std::optional<VersionedValue>();
  return std::optional<VersionedValue>(std::move(snap.items.front().second));
}

absl::Status EtcdStore::Delete(const std::string& key) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  return Call("/v3/kv/deleterange", {{"key", B64(key)}}).status();
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> EtcdStore::List(
    const std::string& prefix) {
  SLUICE_ASSIGN_OR_RETURN(StoreSnapshot snapshot, ListSnapshot(prefix));
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(snapshot.items.size());
  for (auto& [key, v] : snapshot.items)
    out.emplace_back(std::move(key), std::move(v.value));
  return out;
}

absl::StatusOr<StoreSnapshot> EtcdStore::ListSnapshot(const std::string& prefix) {
  // etcd returns a range sorted by key, read at the header's revision.
  if (prefix.empty())
    return Range(std::string(1, '\0'), std::string(1, '\0'));  // every key
  return Range(prefix, internal::PrefixEnd(prefix));
}

absl::StatusOr<int64_t> EtcdStore::PutIf(std::string key, int64_t expected_version,
                                         std::string value) {
  return PutIfLeased(std::move(key), expected_version, std::move(value), 0);
}

absl::StatusOr<int64_t> EtcdStore::PutIfLeased(std::string key, int64_t expected_version,
                                               std::string value, LeaseId lease) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  SLUICE_RETURN_IF_ERROR(internal::ValidatePutIfVersion(expected_version));
  return PutTxn(key, expected_version, value, lease);
}

absl::StatusOr<int64_t> EtcdStore::PutLeased(std::string key, std::string value, LeaseId lease) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  return PutTxn(key, -1, value, lease);
}

absl::StatusOr<int64_t> EtcdStore::PutTxn(const std::string& key, int64_t expected,
                                          const std::string& value, LeaseId lease) {
  json put = {{"key", B64(key)}, {"value", B64(value)}};
  if (lease != 0)
    put["lease"] = std::to_string(lease);
  const json read = {{"request_range", {{"key", B64(key)}}}};
  json txn = {{"success", json::array({{{"request_put", put}}, read})},
              {"failure", json::array({read})}};
  if (expected >= 0)
    txn["compare"] = json::array({internal::VersionCompare(key, expected)});
  SLUICE_ASSIGN_OR_RETURN(json answer, Call("/v3/kv/txn", txn));
  SLUICE_ASSIGN_OR_RETURN(internal::TxnRead got, internal::ParseTxnRead(answer));
  if (!got.succeeded)
    return internal::VersionMismatch(key, expected, got.version);
  return got.version;
}

absl::Status EtcdStore::DeleteIf(const std::string& key, int64_t expected_version) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  SLUICE_RETURN_IF_ERROR(internal::ValidateDeleteIfVersion(expected_version));
  const json read = {{"request_range", {{"key", B64(key)}}}};
  const json txn = {
      {"compare", json::array({internal::VersionCompare(key, expected_version)})},
      {"success", json::array({{{"request_delete_range", {{"key", B64(key)}}}}})},
      {"failure", json::array({read})}};
  SLUICE_ASSIGN_OR_RETURN(json answer, Call("/v3/kv/txn", txn));
  SLUICE_ASSIGN_OR_RETURN(internal::TxnRead got, internal::ParseTxnRead(answer));
  if (!got.succeeded)
    return internal::VersionMismatch("DeleteIf", key, expected_version, got.version);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> EtcdStore::Revision() {
  SLUICE_ASSIGN_OR_RETURN(StoreSnapshot snap, Range(std::string(1, '\0'), ""));
  return snap.revision;
}

absl::StatusOr<LeaseId> EtcdStore::GrantLease(absl::Duration ttl) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateTtl(ttl));
  const int64_t seconds = absl::ToInt64Seconds(absl::Ceil(ttl, absl::Seconds(1)));
  SLUICE_ASSIGN_OR_RETURN(json answer, Call("/v3/lease/grant", {{"TTL", std::to_string(seconds)}}));
  const LeaseId id = Int64Field(answer, "ID");
  if (id == 0) {
    return absl::InternalError(absl::StrCat("etcd store ", endpoint_,
                                            " /v3/lease/grant: no lease id in ", answer.dump()));
  }
  return id;
}

absl::Status EtcdStore::KeepAlive(LeaseId lease) {
  // The gateway serves the keep-alive stream one request at a time: one message in, one out.
  SLUICE_ASSIGN_OR_RETURN(json answer,
                          Call("/v3/lease/keepalive", {{"ID", std::to_string(lease)}}));
  const json& result = answer.contains("result") ? answer["result"] : answer;
  if (Int64Field(result, "TTL") <= 0)
    return internal::LeaseNotFound(lease);
  return absl::OkStatus();
}

absl::Status EtcdStore::RevokeLease(LeaseId lease) {
  absl::Status status = Call("/v3/lease/revoke", {{"ID", std::to_string(lease)}}).status();
  return absl::IsNotFound(status) ? absl::OkStatus() : status;  // idempotent
}

absl::Status EtcdStore::Compact(int64_t revision) {
  return Call("/v3/kv/compaction", {{"revision", std::to_string(revision)}, {"physical", true}})
      .status();
}

}  // namespace sluice::runtime
