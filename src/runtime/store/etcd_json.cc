// The gateway's JSON, read defensively: a malformed answer is a Status naming the endpoint,
// never an exception (nlohmann is called with allow_exceptions = false or guarded by checks).
#include "runtime/store/etcd_json.h"

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace sluice::runtime::internal {

using nlohmann::json;

std::string B64(const std::string& bytes) {
  return absl::Base64Escape(bytes);
}

int64_t Int64Field(const json& object, const char* name) {
  if (!object.is_object())
    return 0;
  auto it = object.find(name);
  if (it == object.end())
    return 0;
  if (it->is_number_integer())
    return it->get<int64_t>();
  int64_t v = 0;
  if (it->is_string() && absl::SimpleAtoi(it->get_ref<const std::string&>(), &v))
    return v;
  return 0;
}

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every byte was 0xff: no upper bound
}

json VersionCompare(const std::string& key, int64_t version) {
  return {{"key", B64(key)},
          {"target", "VERSION"},
          {"result", "EQUAL"},
          {"version", std::to_string(version)}};
}

namespace {

// Typed reads that never throw: a field of another type reads as the fallback.
bool BoolField(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}
std::string StringField(const json& object, const char* name, const std::string& fallback) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

absl::StatusOr<std::string> Bytes(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end())
    return std::string();
  std::string out;
  if (!it->is_string() || !absl::Base64Unescape(it->get_ref<const std::string&>(), &out))
    return absl::DataLossError(absl::StrCat("etcd store: field '", name, "' is not base64"));
  return out;
}

absl::StatusCode CodeForGrpc(int64_t code) {
  if (code <= 0 || code > 16)
    return absl::StatusCode::kUnknown;
  return static_cast<absl::StatusCode>(code);  // absl's codes are gRPC's
}

}  // namespace

absl::StatusOr<EtcdKv> ParseKv(const json& kv) {
  if (!kv.is_object())
    return absl::DataLossError("etcd store: a kv is not an object");
  EtcdKv out;
  auto key = Bytes(kv, "key");
  if (!key.ok())
    return key.status();
  auto value = Bytes(kv, "value");
  if (!value.ok())
    return value.status();
  out.key = std::move(*key);
  out.value = std::move(*value);
  out.version = Int64Field(kv, "version");
  out.mod_revision = Int64Field(kv, "mod_revision");
  return out;
}

absl::StatusOr<TxnRead> ParseTxnRead(const json& answer) {
  TxnRead out;
  out.succeeded = BoolField(answer, "succeeded");
  auto responses = answer.find("responses");
  if (responses == answer.end() || !responses->is_array() || responses->empty())
    return absl::DataLossError(absl::StrCat("etcd store: txn answer without responses: ",
                                            answer.dump()));
  const json& last = responses->back();
  auto range = last.is_object() ? last.find("response_range") : last.end();
  if (range == last.end() || !range->is_object()) {
    if (out.succeeded)
      return out;  // a branch that only writes or deletes (DeleteIf)
    return absl::DataLossError("etcd store: txn answer does not end with a range");
  }
  auto kvs = range->find("kvs");
  if (kvs != range->end() && kvs->is_array() && !kvs->empty())
    out.version = Int64Field(kvs->front(), "version");
  return out;
}

absl::StatusOr<json> ParseEtcdAnswer(const std::string& endpoint, const char* path,
                                     int http_status, const std::string& body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::UnavailableError(absl::StrCat("etcd store ", endpoint, " ", path, ": HTTP ",
                                               http_status, " with a body that is not JSON: ",
                                               body.substr(0, 200)));
  }
  if (http_status == 200 && !parsed.contains("error"))
    return parsed;
  const json& error = parsed.contains("error") && parsed["error"].is_object() ? parsed["error"]
                                                                              : parsed;
  const std::string message =
      StringField(error, "message", StringField(error, "error", body.substr(0, 200)));
  const int64_t code = Int64Field(error, "code");
  return absl::Status(code == 0 ? absl::StatusCode::kUnavailable : CodeForGrpc(code),
                      absl::StrCat("etcd store ", endpoint, " ", path, ": ", message));
}

absl::StatusOr<WatchMessage> ParseWatchMessage(const std::string& endpoint,
                                               const std::string& line) {
  static constexpr char kPath[] = "/v3/watch";
  json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object())
    return absl::DataLossError(absl::StrCat("etcd store ", endpoint, " ", kPath,
                                            ": a message that is not JSON: ", line.substr(0, 200)));
  if (!parsed.contains("result"))
    return ParseEtcdAnswer(endpoint, kPath, 500, line).status();
  const json& result = parsed["result"];
  WatchMessage out;
  if (!result.is_object())
    return absl::DataLossError(absl::StrCat("etcd store ", endpoint, " ", kPath,
                                            ": a result that is not an object"));
  out.created = BoolField(result, "created");
  if (const int64_t compacted = Int64Field(result, "compact_revision"); compacted > 0) {
    return absl::OutOfRangeError(absl::StrCat("etcd store ", endpoint, " ", kPath,
                                              ": history compacted up to revision ", compacted,
                                              "; re-list and watch again"));
  }
  if (BoolField(result, "canceled")) {
    // The stream stays open after a cancel, so the watch must break rather than wait on it.
    return absl::FailedPreconditionError(
        absl::StrCat("etcd store ", endpoint, " ", kPath, ": watch canceled: ",
                     StringField(result, "cancel_reason", "no reason given")));
  }
  auto events = result.find("events");
  if (events == result.end() || !events->is_array())
    return out;
  for (const json& e : *events) {
    if (!e.is_object())
      continue;
    auto kv = e.find("kv");
    if (kv == e.end())
      continue;
    absl::StatusOr<EtcdKv> parsed_kv = ParseKv(*kv);
    if (!parsed_kv.ok())
      return parsed_kv.status();
    const bool deleted = StringField(e, "type", "PUT") == "DELETE";
    out.events.push_back(WatchEvent{deleted ? WatchEvent::Type::kDelete : WatchEvent::Type::kPut,
                                    std::move(parsed_kv->key),
                                    deleted ? "" : std::move(parsed_kv->value),
                                    deleted ? 0 : parsed_kv->version, parsed_kv->mod_revision});
  }
  return out;
}

}  // namespace sluice::runtime::internal
