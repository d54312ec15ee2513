// Process-wide shutdown request for function processes: SIGTERM/SIGINT handlers (installed once,
// async-signal-safe: they set a flag and write to a self-pipe) and RequestShutdown() both make
// ShutdownRequested() true for good. Used by FunctionServer::Wait and RunTraining.
// Thread-safe: every function may be called from any thread.
#ifndef SLUICE_RUNTIME_SDK_SHUTDOWN_H_
#define SLUICE_RUNTIME_SDK_SHUTDOWN_H_

#include "absl/status/status.h"

namespace sluice::runtime {

// Installs the SIGTERM and SIGINT handlers (idempotent). Internal when the pipe cannot be made.
[[nodiscard]] absl::Status InstallShutdownHandlers();
// As if a signal had arrived.
void RequestShutdown();
bool ShutdownRequested();
// Blocks until ShutdownRequested(). Requires InstallShutdownHandlers() to have succeeded.
void WaitForShutdown();

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_SDK_SHUTDOWN_H_
