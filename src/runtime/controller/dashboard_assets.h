// The dashboard's static files (web/dashboard: the page, its script and style, and the vendored
// uPlot chart library), embedded in the controller binary at build time by
// web/dashboard/embed.cmake (the generated dashboard_assets.cc). Thread-safe: constant data.
#ifndef SLUICE_RUNTIME_CONTROLLER_DASHBOARD_ASSETS_H_
#define SLUICE_RUNTIME_CONTROLLER_DASHBOARD_ASSETS_H_

#include <optional>
#include <string_view>

namespace sluice::runtime {

struct DashboardAsset {
  std::string_view content_type;
  std::string_view body;
};

// The asset named `name` ("index.html", "dashboard.js", "dashboard.css", "uPlot.iife.min.js",
// "uPlot.min.css"), or nullopt.
std::optional<DashboardAsset> FindDashboardAsset(std::string_view name);
// False when the build could not vendor uPlot (no npm or no registry): the uPlot assets are
// then stubs and the page shows tables and a notice instead of charts.
bool DashboardChartsVendored();

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_DASHBOARD_ASSETS_H_
