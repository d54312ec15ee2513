# The dashboard's assets, embedded in the controller binary (included by
# src/runtime/controller/CMakeLists.txt, so the generated source belongs to that directory's
# target). At build time embed.cmake runs `npm ci` for the pinned uPlot (package-lock.json) into
# <build>/web/dashboard/npm (skipped while the lock is unchanged) and writes dashboard_assets.cc
# with the page files and uPlot as byte arrays. No CDN at runtime. Without npm or a registry the
# build still succeeds: uPlot becomes a stub and the page shows its tables and a notice.
set(_dash_src ${CMAKE_SOURCE_DIR}/web/dashboard)
set(_dash_out ${CMAKE_BINARY_DIR}/web/dashboard)
set(SLUICE_DASHBOARD_ASSETS_CC ${_dash_out}/dashboard_assets.cc)
find_program(SLUICE_NPM npm)
add_custom_command(
  OUTPUT ${SLUICE_DASHBOARD_ASSETS_CC}
  COMMAND ${CMAKE_COMMAND} -DSRC=${_dash_src} -DOUT=${_dash_out} -DNPM=${SLUICE_NPM}
          -P ${_dash_src}/embed.cmake
  DEPENDS ${_dash_src}/embed.cmake ${_dash_src}/package.json ${_dash_src}/package-lock.json
          ${_dash_src}/index.html ${_dash_src}/dashboard.js ${_dash_src}/dashboard.css
  COMMENT "Vendoring uPlot (npm ci) and embedding the dashboard's assets"
  VERBATIM)
