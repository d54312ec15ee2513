// Node/leader records and LeasedKey (membership.h).
#include "runtime/cluster/membership.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {

using nlohmann::json;

namespace {

absl::StatusOr<json> ParseObject(const std::string& text, const char* what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return absl::InvalidArgumentError(absl::StrCat(what, ": not a JSON object"));
  return j;
}

absl::StatusOr<std::string> StringField(const json& j, const char* what, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": field '", field, "': required, a non-empty string"));
  }
  return it->get<std::string>();
}

}  // namespace

std::string NodeKey(const std::string& id) {
  return absl::StrCat(kNodesPrefix, id);
}

std::string NodeRecordJson(const NodeRecord& n) {
  return json{{"id", n.id}, {"address", n.address}, {"gpus", n.gpus}, {"device", n.device}}
      .dump();
}

absl::StatusOr<NodeRecord> ParseNodeRecord(const std::string& text) {
  SLUICE_ASSIGN_OR_RETURN(json j, ParseObject(text, "node record"));
  NodeRecord n;
  SLUICE_ASSIGN_OR_RETURN(n.id, StringField(j, "node record", "id"));
  SLUICE_ASSIGN_OR_RETURN(n.address, StringField(j, "node record", "address"));
  auto g = j.find("gpus");
  if (g != j.end()) {
    if (!g->is_number_integer() || g->get<int>() < 0)
      return absl::InvalidArgumentError("node record: field 'gpus': a count >= 0");
    n.gpus = g->get<int>();
  }
  if (auto d = j.find("device"); d != j.end() && d->is_string())
    n.device = d->get<std::string>();
  return n;
}

std::string LeaderRecordJson(const LeaderRecord& l) {
  return json{{"id", l.id}, {"address", l.address}}.dump();
}

absl::StatusOr<LeaderRecord> ParseLeaderRecord(const std::string& text) {
  SLUICE_ASSIGN_OR_RETURN(json j, ParseObject(text, "leader record"));
  LeaderRecord l;
  SLUICE_ASSIGN_OR_RETURN(l.id, StringField(j, "leader record", "id"));
  SLUICE_ASSIGN_OR_RETURN(l.address, StringField(j, "leader record", "address"));
  return l;
}

LeasedKey::LeasedKey(ClusterStore& store, std::string key, std::string value,
                     absl::Duration ttl)
    : store_(store), key_(std::move(key)), value_(std::move(value)), ttl_(ttl) {}

LeasedKey::~LeasedKey() {
  if (lease_ != 0)
    (void)store_.RevokeLease(lease_);
}

absl::Status LeasedKey::Tick(absl::Time now) {
  if (lease_ != 0) {
    if (now < next_renewal_)
      return absl::OkStatus();
    absl::Status s = store_.KeepAlive(lease_);
    if (s.ok()) {
      next_renewal_ = now + period();
      return s;
    }
    if (!absl::IsNotFound(s))
      return s;  // the store is away: the lease may still live, renew it next round
    lease_ = 0;  // expired: register afresh below
  }
  SLUICE_ASSIGN_OR_RETURN(LeaseId lease, store_.GrantLease(ttl_));
  absl::StatusOr<int64_t> put = store_.PutLeased(key_, value_, lease);
  if (!put.ok()) {
    (void)store_.RevokeLease(lease);
    return put.status();
  }
  lease_ = lease;
  next_renewal_ = now + period();
  if (registrations_++ > 0)
    ++reregistrations_;
  return absl::OkStatus();
}

}  // namespace sluice::runtime
