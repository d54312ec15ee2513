// WorkerEnv: program discovery (options, environment, the build tree, next to the executable),
// device resolution and the environment each sluice-spin runs in.
#include "runtime/node_cli/worker_env.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "intercept/protocol.h"
#include "runtime/agent/spin_calibration.h"
#include "runtime/common/loop_env.h"
#include "runtime/common/program_path.h"

namespace sluice::runtime {
namespace {

}  // namespace

absl::Status ValidateShareTestOptions(const ShareTestOptions& o) {
  if (o.device != "auto" && o.device != "emulated" && o.device != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be auto, emulated or cuda, got '", o.device, "'"));
  }
  if (o.limits.empty() || o.limits.size() > SLUICE_MAX_SLOTS) {
    return absl::InvalidArgumentError("--limits needs 1 to 32 values");
  }
  for (double l : o.limits) {
    if (!(l > 0 && l <= 1)) return absl::InvalidArgumentError("--limits: each must be in (0, 1]");
  }
  if (!o.time_quotas.empty() && o.time_quotas.size() != o.limits.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--time-quotas: ", o.time_quotas.size(), " values for ", o.limits.size(),
                     " --limits (one per process)"));
  }
  for (double q : o.time_quotas) {
    if (!(q > 0 && q <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--time-quotas: each must be in (0, 1], got ", q));
    }
  }
  if (o.time_window_periods < 1 || o.time_window_periods > 1000) {
    return absl::InvalidArgumentError("--window-periods must be in [1, 1000]");
  }
  if (o.duration <= absl::ZeroDuration() || o.duration > absl::Hours(1)) {
    return absl::InvalidArgumentError("--seconds must be in (0, 3600]");
  }
  if (o.period < absl::Milliseconds(1) || o.period > absl::Seconds(1)) {
    return absl::InvalidArgumentError("--period-ms must be in [1, 1000]");
  }
  if (!(o.headroom >= 0 && o.headroom < 1)) {
    return absl::InvalidArgumentError("headroom must be in [0, 1)");
  }
  if (o.block_ns <= 0) return absl::InvalidArgumentError("block_ns must be > 0");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<WorkerEnv>> WorkerEnv::Create(const ShareTestOptions& o) {
  std::unique_ptr<WorkerEnv> w(new WorkerEnv);
  const std::string exe = ExecutableDir();
  w->spin_path_ = FindProgramPath(o.spin_path, "SLUICE_SPIN",
                                  {SLUICE_BUILD_DIR "/bin/sluice-spin", exe + "/sluice-spin"});
  w->intercept_lib_ =
      FindProgramPath(o.intercept_lib, "SLUICE_INTERCEPT_LIB",
                      {SLUICE_BUILD_DIR "/src/intercept/libsluice_cuda.so",
                       exe + "/libsluice_cuda.so", exe + "/../lib/libsluice_cuda.so"});
  w->emulated_dir_ =
      FindProgramPath(o.emulated_dir, "SLUICE_EMULATED_DIR",
                      {SLUICE_BUILD_DIR "/emulated", exe + "/../lib/sluice-emulated"});
  if (w->spin_path_.empty()) {
    return absl::NotFoundError("sluice-spin not found (build it, or set SLUICE_SPIN)");
  }
  if (w->intercept_lib_.empty()) {
    return absl::NotFoundError(
        "libsluice_cuda.so not found (build target sluice_intercept, or set SLUICE_INTERCEPT_LIB)");
  }
  const int64_t stamp = ToMonotonicNanos(MonotonicNow());
  w->socket_path_ = absl::StrCat("/tmp/sluice-share-", getpid(), "-", stamp % 1000000, ".sock");
  w->device_ = o.device;
  if (o.device == "auto" || o.device == "cuda") {
    w->device_ = "cuda";
    auto probe = w->Spawn({"--probe"}, false, -1, /*quiet=*/true);  // no driver: loader noise
    absl::StatusOr<nlohmann::json> p =
        probe.ok() ? ReadSpinEvent(**probe, "probe", absl::Seconds(30)) : probe.status();
    const bool real = p.ok() && !p->value("emulated", true);
    if (!real && o.device == "cuda") {
      return absl::FailedPreconditionError(absl::StrCat(
          "--device cuda: sluice-spin --probe found no real CUDA driver with a device (",
          p.ok() ? "the driver it loaded is the emulated one" : p.status().message(), ")"));
    }
    if (!real) w->device_ = "emulated";
  }
  if (w->device_ == "emulated") {
    if (w->emulated_dir_.empty() || access((w->emulated_dir_ + "/libcuda.so.1").c_str(), F_OK)) {
      return absl::NotFoundError(
          "emulated libcuda.so.1 not found (build sluice_intercept_emulated, or set "
          "SLUICE_EMULATED_DIR)");
    }
    char uuid[64];
    std::snprintf(uuid, sizeof(uuid), "EMU-%08x-5a4e-0000-0000-%012llx",
                  static_cast<unsigned>(getpid()),
                  static_cast<unsigned long long>(stamp) & 0xffffffffffffULL);
    w->emu_uuid_ = uuid;
  }
  return w;
}

WorkerEnv::~WorkerEnv() {
  if (!emu_uuid_.empty()) shm_unlink(("/sluice-emu-" + emu_uuid_).c_str());
}

SpawnOptions WorkerEnv::Options(std::vector<std::string> args, bool preload,
                                int64_t instance) const {
  SpawnOptions s;
  s.argv.push_back(spin_path_);
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  s.unset_env = {"SLUICE_TOKEN_SOCKET", "SLUICE_INSTANCE_ID", "SLUICE_GPU_UUID"};
  if (!emu_uuid_.empty()) {
    s.env.push_back({"LD_LIBRARY_PATH", emulated_dir_});
    s.env.push_back({"SLUICE_EMU_UUID", emu_uuid_});
    s.env.push_back({"SLUICE_REAL_LIBCUDA", emulated_dir_ + "/libcuda.so.1"});
  } else {
    s.unset_env.push_back("SLUICE_EMU_UUID");
  }
  if (preload) {
    s.env.push_back({"LD_PRELOAD", intercept_lib_});
    s.env.push_back({"SLUICE_TOKEN_SOCKET", socket_path_});
    s.env.push_back({"SLUICE_INSTANCE_ID", std::to_string(instance)});
    if (!gpu_uuid_.empty()) s.env.push_back({"SLUICE_GPU_UUID", gpu_uuid_});
  } else {
    s.unset_env.push_back("LD_PRELOAD");
  }
  return s;
}

absl::StatusOr<std::unique_ptr<Subprocess>> WorkerEnv::Spawn(std::vector<std::string> args,
                                                             bool preload, int64_t instance,
                                                             bool quiet) const {
  SpawnOptions s = Options(std::move(args), preload, instance);
  s.discard_stderr = quiet;
  return Subprocess::Spawn(s);
}

}  // namespace sluice::runtime
