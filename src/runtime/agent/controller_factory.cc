// MakeGpuController: name -> controller, with each controller's defaults for the given period.
#include "runtime/agent/controller_factory.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "core/baselines/static_share_controller.h"
#include "core/dilu/vertical_controller.h"

namespace sluice::runtime {

absl::StatusOr<std::unique_ptr<core::VerticalController>> MakeGpuController(
    const std::string& name, absl::Duration period) {
  if (name == "dilu") {
    core::VerticalConfig c;
    c.period = period;
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<core::DiluVerticalController> ctl,
                            core::DiluVerticalController::Create(c));
    return std::unique_ptr<core::VerticalController>(std::move(ctl));
  }
  if (name == "static") return std::make_unique<core::StaticShareController>();
  if (name == "request") {
    return std::make_unique<core::StaticRequestController>(period, core::VerticalConfig{}.token_floor);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown vertical controller '", name, "' (dilu, static, request)"));
}

}  // namespace sluice::runtime
