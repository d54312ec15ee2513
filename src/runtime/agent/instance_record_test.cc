// instances.json: round trip, errors naming the path and record, /proc start times (a recycled
// pid is told apart), and the supervisor's re-adoption of a process it did not start.
#include "runtime/agent/instance_record.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "gtest/gtest.h"
#include "runtime/agent/instance_process.h"

namespace sluice::runtime {
namespace {

InstanceRecord Sample() {
  InstanceRecord r;
  r.id = 7;
  r.pid = 1234;
  r.start_ticks = 99;
  r.restarts = 2;
  r.launch.function = "f";
  r.launch.gpu_uuid = "EMU-1";
  r.launch.gpus = {"EMU-1", "EMU-2"};
  r.launch.llm = true;
  r.launch.port = 7101;
  r.launch.process.argv = {"/bin/sleep", "60"};
  r.launch.process.env = {{"A", "1"}, {"B", "x=y"}};
  r.launch.process.unset_env = {"LD_PRELOAD"};
  r.launch.process.log_path = "/tmp/f-7.log";
  r.launch.quota = {0.25, 0.5, false, 1024, 0.5};
  return r;
}

TEST(InstanceRecordTest, RoundTrips) {
  const std::string text = InstanceRecordsToJson({Sample()});
  absl::StatusOr<std::vector<InstanceRecord>> back = ParseInstanceRecords(text, "/r.json");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 1u);
  const InstanceRecord& r = (*back)[0];
  EXPECT_EQ(r.id, 7);
  EXPECT_EQ(r.pid, 1234);
  EXPECT_EQ(r.start_ticks, 99u);
  EXPECT_EQ(r.restarts, 2);
  EXPECT_EQ(r.launch.gpus, Sample().launch.gpus);
  EXPECT_TRUE(r.launch.llm);
  EXPECT_EQ(r.launch.process.env, Sample().launch.process.env);
  EXPECT_EQ(r.launch.quota.mem_limit_bytes, 1024);
  EXPECT_EQ(r.launch.quota.time_quota, 0.5);
  EXPECT_EQ(InstanceRecordsToJson(*back), text);
}

TEST(InstanceRecordTest, MalformedNamesPathAndRecord) {
  absl::StatusOr<std::vector<InstanceRecord>> r =
      ParseInstanceRecords(R"({"instances": [{"id": 1}]})", "/run/instances.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/run/instances.json: instances[0]"), std::string::npos)
      << r.status();
  EXPECT_FALSE(ParseInstanceRecords("nope", "/x").ok());
  absl::StatusOr<std::vector<InstanceRecord>> none = ReadInstanceRecords("/nonexistent/i.json");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(InstanceRecordTest, StartTicksTellARecycledPidApart) {
  const std::optional<uint64_t> self = ProcessStartTicks(getpid());
  ASSERT_TRUE(self.has_value());
  InstanceRecord r = Sample();
  r.pid = getpid();
  r.start_ticks = *self;
  EXPECT_TRUE(RecordAlive(r));
  r.start_ticks = *self + 1;  // same pid, another process
  EXPECT_FALSE(RecordAlive(r));
  EXPECT_FALSE(ProcessStartTicks(0).has_value());
}

TEST(InstanceRecordTest, WriteThenRead) {
  char tmpl[] = "/tmp/sluice-rec-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/instances.json";
  ASSERT_TRUE(WriteInstanceRecords(path, {Sample(), Sample()}).ok());
  absl::StatusOr<std::vector<InstanceRecord>> back = ReadInstanceRecords(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->size(), 2u);
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace sluice::runtime
