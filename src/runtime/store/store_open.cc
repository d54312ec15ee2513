// OpenStore: the `--store URI` of the daemons. `sqlite:PATH` or a bare path (the embedded
// default), `etcd://HOST:PORT`, `memory:`. Thread-safe: stateless.
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "runtime/store/etcd_store.h"
#include "runtime/store/memory_store.h"
#include "runtime/store/sqlite_store.h"
#include "runtime/store/store.h"

namespace sluice::runtime {
namespace {

// A URI scheme: a letter, then letters, digits, '+', '-' or '.', then ':'.
bool HasScheme(const std::string& uri) {
  const size_t colon = uri.find(':');
  if (colon == std::string::npos || colon == 0 || !absl::ascii_isalpha(uri[0]))
    return false;
  for (size_t i = 1; i < colon; ++i) {
    const char c = uri[i];
    if (!absl::ascii_isalnum(c) && c != '+' && c != '-' && c != '.')
      return false;
  }
  return true;
}

absl::Status BadUri(const std::string& uri, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--store '", uri, "': ", why,
      " (expected sqlite:PATH, a file path, etcd://HOST:PORT or memory:)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& uri, const common::Env& env) {
  if (uri.empty())
    return BadUri(uri, "empty");
  if (uri == "memory:")
    return std::make_unique<MemoryStore>(env);
  if (absl::StartsWith(uri, "etcd://")) {
    std::string endpoint = uri.substr(7);
    while (absl::EndsWith(endpoint, "/"))
      endpoint.pop_back();
    if (endpoint.empty() || absl::StrContains(endpoint, "/"))
      return BadUri(uri, "etcd needs HOST:PORT and nothing after it");
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<EtcdStore> etcd, EtcdStore::Open(endpoint));
    return etcd;
  }
  std::string path = uri;
  if (absl::StartsWith(uri, "sqlite:")) {
    path = uri.substr(7);
    if (path.empty())
      return BadUri(uri, "sqlite needs a file path");
  } else if (HasScheme(uri)) {
    return BadUri(uri, absl::StrCat("unknown scheme '", uri.substr(0, uri.find(':')), "'"));
  }
  SqliteStoreOptions options;
  options.env = &env;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> sqlite, SqliteStore::Open(path, options));
  return sqlite;
}

}  // namespace sluice::runtime
