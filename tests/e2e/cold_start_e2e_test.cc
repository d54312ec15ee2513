// Scale to zero and back on the platform (issue 13 item 3, docs/platform.md "Cold starts"): a
// min-0 function idles to zero instances, and its next request waits at the gateway while the
// agent hands a pre-started runtime process the instance and its parameters come from the
// node's host-memory store. Measured: that first request's latency minus a warm request's (the
// model's own compute and the request path), from the host cache (asserted < 300 ms, the
// issue's Done means) and from disk (the store's copy evicted, the file's page cache dropped:
// printed, not asserted). Emulated device; figures are not GPU figures.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "platform_test_base.h"

namespace sluice::runtime::e2e {
namespace {

class ColdStartTest : public PlatformTest {
 protected:
  PlatformConfig Config() const override {
    PlatformConfig c;
    c.gpus = 1;
    c.lazy_window = absl::Seconds(2);  // 10 load reports: idle to zero in about 1.5 s
    c.phi_out = 6;
    c.phi_in = 6;  // phi_out + phi_in > window samples: no flapping
    return c;
  }

  static Json Request(const std::string& id) { return Row(id, {2, 2}, {3, 4, -1, 2}); }

  // Latency of one request through the gateway, ms; -1 on failure (recorded).
  double TimedInfer(const std::string& id) {
    const absl::Time t = absl::Now();
    absl::StatusOr<http::Response> r =
        p_->Infer(kName, Request(id), {{"sluice-timeout-ms", "20000"}});
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - t);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return -1;
    EXPECT_EQ(r->status, 200) << r->body;
    return r->status == 200 ? ms : -1;
  }

  // Waits until the function has no instance, the agent's pool has a process listening, and
  // the store holds (`cached`) or does not hold the model.
  void WaitIdleAtZero() {
    absl::StatusOr<Json> f = p_->WaitFunction(
        kName, [](const Json& j) { return j.value("instances", Json::array()).empty(); },
        absl::Seconds(60));
    ASSERT_TRUE(f.ok()) << f.status();
    for (int i = 0; i < 1500; ++i) {
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(p_->dir() + "/run/pool", ec)) {
        if (e.path().extension() == ".sock") return;
      }
      usleep(20000);
    }
    FAIL() << "no pre-started process listening in " << p_->dir() << "/run/pool";
  }

  bool StoreHolds(const std::string& model) {
    absl::StatusOr<http::Response> r = Platform::Send(p_->agent(), "GET", "/agent/v1/params");
    if (!r.ok()) return false;
    const Json j = Json::parse(r->body, nullptr, false);
    for (const Json& m : j.value("models", Json::array())) {
      if (m.value("model", "") == model && m.value("ready", false)) return true;
    }
    return false;
  }

  // One scale-from-zero round: the first request's latency minus the median warm one, and the
  // agent's start record of the instance that served it.
  std::pair<double, Json> Round(const std::string& tag) {
    const double first = TimedInfer(tag + "-first");
    std::vector<double> warm;
    for (int i = 0; i < 3; ++i) warm.push_back(TimedInfer(absl::StrCat(tag, "-warm-", i)));
    std::sort(warm.begin(), warm.end());
    const Json instances = p_->AgentInstances(kName);
    Json start;
    if (!instances.empty()) start = instances[0].value("start", Json());
    const double cold = first - warm[1];
    std::printf("COLD_START %s first_ms=%.1f warm_ms=%.1f excess_ms=%.1f agent_start=%s\n",
                tag.c_str(), first, warm[1], cold, start.dump().c_str());
    return {cold, start};
  }

  static constexpr char kName[] = "tail";
};

TEST_F(ColdStartTest, ScaledToZeroFunctionAnswersItsFirstRequestFromTheHostCacheInUnder300ms) {
  ClassifierSpec spec;
  spec.name = kName;
  spec.model_path = p_->WriteFile("weights.json", KnownWeights());
  spec.min = 0;
  spec.max = 1;
  absl::StatusOr<http::Response> d = p_->Deploy(spec.Yaml());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->status, 201) << d->body;
  // Profiling started an instance from disk; its model file went into the store meanwhile.
  ASSERT_TRUE(p_->WaitFunction(kName, [](const Json& j) { return j.value("state", "") == "ready"; },
                               absl::Seconds(90))
                  .ok());
  // A first wake (pool and store may still be warming up), then idle back to zero.
  ASSERT_GT(TimedInfer("warmup"), 0);
  WaitIdleAtZero();
  auto [cache_ms, cache_start] = Round("host-cache");
  ASSERT_TRUE(cache_start.is_object()) << "no instance served the first request";
  EXPECT_EQ(cache_start.value("path", ""), "pool") << cache_start.dump();
  EXPECT_EQ(cache_start.value("params", ""), "host-cache") << cache_start.dump();
  EXPECT_LT(cache_ms, 300) << "first request from the host cache, beyond a warm one's latency";

  // From disk: idle to zero again, evict the store's copy, drop the file's page cache.
  const std::string stored = cache_start.value("params_model", "");
  ASSERT_FALSE(stored.empty());
  WaitIdleAtZero();
  absl::StatusOr<http::Response> ev =
      Platform::Send(p_->agent(), "DELETE", "/agent/v1/params/" + stored);
  ASSERT_TRUE(ev.ok()) << ev.status();
  ASSERT_EQ(ev->status, 200) << ev->body;
  ASSERT_FALSE(StoreHolds(stored));
  const int fd = open(spec.model_path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  auto [disk_ms, disk_start] = Round("disk");
  ASSERT_TRUE(disk_start.is_object());
  EXPECT_EQ(disk_start.value("params", ""), "disk") << disk_start.dump();
  EXPECT_GT(disk_ms, -1);
}

}  // namespace
}  // namespace sluice::runtime::e2e
