// Helpers shared by the GPU validation kit's test programs (launch_bench, launch_bench_rt,
// mem_limit; built by scripts/gpu-validate.sh with nvcc or the host compiler): monotonic clock,
// percentiles, which driver libraries are mapped into this process, and JSON string quoting.
// Header-only; no CUDA dependency; single-threaded use.
#ifndef SLUICE_TOOLS_GPU_KIT_COMMON_H_
#define SLUICE_TOOLS_GPU_KIT_COMMON_H_

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace sluice_kit {

inline int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Order statistics of a sample (nearest-rank percentiles); all zero for an empty sample.
struct Summary {
  int64_t count = 0;
  double mean = 0;
  int64_t min = 0, median = 0, p90 = 0, p99 = 0, max = 0;
};

// Sorts `v` in place.
inline Summary Summarize(std::vector<int64_t>& v) {
  Summary s;
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  const auto rank = [&v](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(v.size()));
    return v[std::min(i, v.size() - 1)];
  };
  double sum = 0;
  for (int64_t x : v)
    sum += static_cast<double>(x);
  s.count = static_cast<int64_t>(v.size());
  s.mean = sum / static_cast<double>(v.size());
  s.min = v.front();
  s.median = rank(0.5);
  s.p90 = rank(0.9);
  s.p99 = rank(0.99);
  s.max = v.back();
  return s;
}

inline std::string SummaryJson(const Summary& s) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"count\":%lld,\"mean\":%.1f,\"min\":%lld,\"median\":%lld,\"p90\":%lld,"
                "\"p99\":%lld,\"max\":%lld}",
                static_cast<long long>(s.count), s.mean, static_cast<long long>(s.min),
                static_cast<long long>(s.median), static_cast<long long>(s.p90),
                static_cast<long long>(s.p99), static_cast<long long>(s.max));
  return buf;
}

// `text` as a JSON string literal (quotes, backslashes and control characters escaped).
inline std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Files mapped into this process whose path contains "libsluice_cuda" (the interception
// library, whichever name it was loaded under: /proc/self/maps shows the resolved file) or
// "libcuda.so" (a driver). Lets a report show which driver really served the run.
struct Mapped {
  std::string intercept;  // empty: the interception library is not loaded
  std::vector<std::string> drivers;
};

inline Mapped MappedLibraries() {
  Mapped m;
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr)
    return m;
  char line[4096];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    const char* path = std::strchr(line, '/');
    if (path == nullptr)
      continue;
    std::string p(path);
    while (!p.empty() && (p.back() == '\n' || p.back() == ' '))
      p.pop_back();
    if (p.find("libsluice_cuda") != std::string::npos) {
      m.intercept = p;
    } else if (p.find("libcuda.so") != std::string::npos &&
               std::find(m.drivers.begin(), m.drivers.end(), p) == m.drivers.end()) {
      m.drivers.push_back(p);
    }
  }
  std::fclose(f);
  return m;
}

inline std::string MappedJson(const Mapped& m) {
  std::string out = "{\"intercept\":" + JsonString(m.intercept) + ",\"drivers\":[";
  for (size_t i = 0; i < m.drivers.size(); ++i) {
    out += (i ? "," : "") + JsonString(m.drivers[i]);
  }
  return out + "]}";
}

}  // namespace sluice_kit

#endif  // SLUICE_TOOLS_GPU_KIT_COMMON_H_
