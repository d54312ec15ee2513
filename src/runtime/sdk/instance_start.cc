// Pool handoff, parameter reads and the start record (instance_start.h).
#include "runtime/sdk/instance_start.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "runtime/paramstore/fd_server.h"

namespace sluice::runtime {
namespace {

absl::Mutex g_mu;
StartRecord g_record ABSL_GUARDED_BY(g_mu);

double MsSince(absl::Time t) { return absl::ToDoubleMilliseconds(absl::Now() - t); }

absl::StatusOr<int> Listen(const std::string& path) {
  sockaddr_un a{};
  if (path.size() >= sizeof(a.sun_path)) {
    return absl::InvalidArgumentError("SLUICE_POOL_SOCKET: path too long: " + path);
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("SLUICE_POOL_SOCKET: socket: " + std::string(strerror(errno)));
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  unlink(path.c_str());
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 1) != 0) {
    const std::string why = strerror(errno);
    close(fd);
    return absl::InternalError("SLUICE_POOL_SOCKET " + path + ": " + why);
  }
  return fd;
}

absl::StatusOr<std::string> ReadToEof(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError("pool assignment: read: " + std::string(strerror(errno)));
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

absl::Status ApplyAssignment(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("env") || !j["env"].is_array()) {
    return absl::InvalidArgumentError("pool assignment: field 'env': expected [[name, value]]");
  }
  for (const nlohmann::json& kv : j["env"]) {
    if (!kv.is_array() || kv.size() != 2 || !kv[0].is_string() || !kv[1].is_string()) {
      return absl::InvalidArgumentError("pool assignment: field 'env': entries are [name, value]");
    }
    setenv(kv[0].get<std::string>().c_str(), kv[1].get<std::string>().c_str(), 1);
  }
  unsetenv("SLUICE_POOL_SOCKET");
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFromStore(const std::string& socket, const std::string& model) {
  absl::StatusOr<std::unique_ptr<ParamClient>> c = ParamClient::OpenFds(socket, model);
  if (!c.ok()) {
    return absl::Status(c.status().code(), absl::StrCat("parameters '", model, "' from ", socket,
                                                        ": ", c.status().message()));
  }
  std::string out(static_cast<size_t>((*c)->size()), '\0');
  const int64_t chunk = (*c)->chunk_bytes();
  for (size_t i = 0; i < (*c)->fds().size(); ++i) {
    const int64_t off = static_cast<int64_t>(i) * chunk;
    const int64_t want = std::min<int64_t>(chunk, (*c)->size() - off);
    for (int64_t got = 0; got < want;) {
      const ssize_t n = pread((*c)->fds()[i], out.data() + off + got,
                              static_cast<size_t>(want - got), got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return absl::DataLossError("parameters '" + model + "': short read");
      got += n;
    }
  }
  return out;  // the client's connection (the pin) closes here: the bytes are ours now
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError("model file " + path + " cannot be read");
  struct stat st {};
  fstat(fd, &st);
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (got != out.size()) return absl::DataLossError("model file " + path + ": short read");
  return out;
}

}  // namespace

StartRecord CurrentStartRecord() {
  absl::MutexLock lock(&g_mu);
  return g_record;
}

void UpdateStartRecord(const std::function<void(StartRecord&)>& update) {
  absl::MutexLock lock(&g_mu);
  update(g_record);
}

nlohmann::json StartRecordJson() {
  const StartRecord r = CurrentStartRecord();
  return {{"pooled", r.pooled},         {"prestart_ms", r.prestart_ms},
          {"waited_ms", r.waited_ms},   {"handoff_ms", r.handoff_ms},
          {"params_source", r.params_source}, {"params_bytes", r.params_bytes},
          {"params_ms", r.params_ms},   {"load_ms", r.load_ms},
          {"ready_ms", r.ready_ms}};
}

absl::Status WaitForAssignment(const std::string& socket_path) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // an idle pooled process dies with its agent
  if (getppid() == 1) return absl::UnavailableError("pool mode: the agent is gone");
  absl::StatusOr<int> listener = Listen(socket_path);
  if (!listener.ok()) return listener.status();
  const absl::Time idle = absl::Now();
  int conn = -1;
  do {
    conn = accept4(*listener, nullptr, nullptr, SOCK_CLOEXEC);
  } while (conn < 0 && errno == EINTR);
  const absl::Time accepted = absl::Now();
  close(*listener);
  unlink(socket_path.c_str());
  if (conn < 0) return absl::InternalError("pool mode: accept: " + std::string(strerror(errno)));
  absl::StatusOr<std::string> text = ReadToEof(conn);
  close(conn);
  if (!text.ok()) return text.status();
  if (absl::Status s = ApplyAssignment(*text); !s.ok()) return s;
  prctl(PR_SET_PDEATHSIG, 0);  // an instance now: it survives an agent restart
  UpdateStartRecord([&](StartRecord& r) {
    r.pooled = true;
    r.waited_ms = absl::ToDoubleMilliseconds(accepted - idle);
    r.handoff_ms = MsSince(accepted);
  });
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadInstanceParameters() {
  const absl::Time t = absl::Now();
  const char* socket = std::getenv("SLUICE_PARAMS_SOCKET");
  const char* model = std::getenv("SLUICE_PARAMS_MODEL");
  const char* path = std::getenv("SLUICE_MODEL_PATH");
  std::string source = "none";
  absl::StatusOr<std::string> bytes = std::string();
  struct stat st {};
  if (socket != nullptr && model != nullptr && *socket != '\0' && *model != '\0') {
    source = "host-cache";
    bytes = ReadFromStore(socket, model);
  } else if (path != nullptr && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
    source = "disk";
    bytes = ReadFile(path);
  }
  if (!bytes.ok()) return bytes.status();
  UpdateStartRecord([&](StartRecord& r) {
    r.params_source = source;
    r.params_bytes = static_cast<int64_t>(bytes->size());
    r.params_ms = MsSince(t);
  });
  return bytes;
}

}  // namespace sluice::runtime
