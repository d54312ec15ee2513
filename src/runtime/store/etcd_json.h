// The JSON of etcd's v3 gRPC gateway, for EtcdStore and its watches: base64 bytes, int64 fields
// as strings, key ranges, txn answers, error bodies and watch stream messages. Internal to
// runtime/store; stateless and thread-safe.
#ifndef SLUICE_RUNTIME_STORE_ETCD_JSON_H_
#define SLUICE_RUNTIME_STORE_ETCD_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

#include "runtime/store/store.h"

namespace sluice::runtime::internal {

std::string B64(const std::string& bytes);
// An int64 field that the gateway writes as a string (or a number; absent: 0).
int64_t Int64Field(const nlohmann::json& object, const char* name);
// The end of the key range holding every key that starts with non-empty `prefix` (etcd's
// range_end): the prefix with its last byte below 0xff incremented; "\0" (no end) if none.
std::string PrefixEnd(const std::string& prefix);
// A txn compare "the version of `key` equals `version`".
nlohmann::json VersionCompare(const std::string& key, int64_t version);

struct EtcdKv {
  std::string key;
  std::string value;
  int64_t version = 0;
  int64_t mod_revision = 0;
};
absl::StatusOr<EtcdKv> ParseKv(const nlohmann::json& kv);

// The outcome of a txn whose failure branch (and maybe its success branch) ends with a range
// read of the key.
struct TxnRead {
  bool succeeded = false;
  int64_t version = 0;  // of the key after the txn (0: absent or not read)
};
absl::StatusOr<TxnRead> ParseTxnRead(const nlohmann::json& answer);

// Parses an answer of `path`. HTTP 200: the JSON body. Otherwise etcd's gRPC code mapped to a
// Status (NotFound, OutOfRange, InvalidArgument, FailedPrecondition, Unavailable, ...) whose
// message names the endpoint, the path and etcd's message.
absl::StatusOr<nlohmann::json> ParseEtcdAnswer(const std::string& endpoint, const char* path,
                                               int http_status, const std::string& body);

// One message of a /v3/watch stream: the events it carries (revision order), or the Status that
// ends the watch (OutOfRange when etcd compacted the history it needs; the error etcd sent).
struct WatchMessage {
  std::vector<WatchEvent> events;
  bool created = false;
};
absl::StatusOr<WatchMessage> ParseWatchMessage(const std::string& endpoint,
                                               const std::string& line);

}  // namespace sluice::runtime::internal

#endif  // SLUICE_RUNTIME_STORE_ETCD_JSON_H_
