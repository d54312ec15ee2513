// Test helpers for src/sim/workload: temporary fixture files, the shared-data directory, and
// draining an ArrivalSource. Header-only; tests only. Not thread-safe (tests are sequential).
#ifndef SLUICE_SIM_WORKLOAD_TESTING_FIXTURES_H_
#define SLUICE_SIM_WORKLOAD_TESTING_FIXTURES_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

#include "sim/workload/arrivals.h"

namespace sluice::sim::testing {

// A fresh directory under the gtest temp dir, named after the running test.
inline std::string FixtureDir() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "sluice_workload" /
                              (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Writes `contents` to dir/name and returns the full path.
inline std::string WriteFixture(const std::string& dir, const std::string& name,
                                absl::string_view contents) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  std::ofstream out(path, std::ios::binary);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  return path;
}

// $SLUICE_DATA_DIR, else $SLUICE_SOURCE_DIR/../shared/data, else ../shared/data.
inline std::string SharedDataDir() {
  if (const char* d = std::getenv("SLUICE_DATA_DIR"); d != nullptr && *d != '\0') {
    return d;
  }
  if (const char* s = std::getenv("SLUICE_SOURCE_DIR"); s != nullptr && *s != '\0') {
    return std::string(s) + "/../shared/data";
  }
  return "../shared/data";
}

// Every arrival the source yields (it must be finite).
inline std::vector<Arrival> Drain(ArrivalSource& source) {
  std::vector<Arrival> out;
  while (std::optional<Arrival> a = source.Next()) {
    out.push_back(*a);
  }
  return out;
}

// Inter-arrival gaps in seconds.
inline std::vector<double> Gaps(const std::vector<Arrival>& arrivals) {
  std::vector<double> gaps;
  for (size_t i = 1; i < arrivals.size(); ++i) {
    gaps.push_back(absl::ToDoubleSeconds(arrivals[i].at - arrivals[i - 1].at));
  }
  return gaps;
}

}  // namespace sluice::sim::testing

#endif  // SLUICE_SIM_WORKLOAD_TESTING_FIXTURES_H_
