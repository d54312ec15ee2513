// Tests of the agent API's body parsing, placeholder expansion and instance environment.
#include "runtime/agent/instance_config.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/agent/gpu_discovery.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

constexpr char kGood[] =
    R"({"id": 17, "function": "resnet", "command": ["${SLUICE_BIN_DIR}/x", "--port", "${PORT}"],
        "env": {"A": "${FUNCTION}-${INSTANCE}", "SLUICE_MAX_BATCH": "9"}, "gpu": "EMU-1",
        "request": 0.3, "limit": 0.6, "slo_sensitive": false, "mem_limit_bytes": 1024,
        "restart": "never", "model_path": "/m", "max_batch": 4})";

TEST(ParseStartInstance, ReadsEveryField) {
  absl::StatusOr<StartInstance> s = ParseStartInstance(kGood);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->id, 17);
  EXPECT_EQ(s->function, "resnet");
  EXPECT_EQ(s->command.size(), 3u);
  EXPECT_EQ(s->env.at("A"), "${FUNCTION}-${INSTANCE}");
  EXPECT_EQ(s->gpu, "EMU-1");
  EXPECT_DOUBLE_EQ(s->request, 0.3);
  EXPECT_DOUBLE_EQ(s->limit, 0.6);
  EXPECT_FALSE(s->slo_sensitive);
  EXPECT_EQ(s->mem_limit_bytes, 1024);
  EXPECT_EQ(s->restart, "never");
  EXPECT_EQ(s->model_path, "/m");
  EXPECT_EQ(s->max_batch, 4);
}

TEST(ParseStartInstance, DefaultsAndLimitFollowsRequest) {
  absl::StatusOr<StartInstance> s =
      ParseStartInstance(R"({"id": 0, "function": "f", "command": ["a"], "request": 0.4})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->restart, "on-failure");
  EXPECT_EQ(s->kind, "inference");
  EXPECT_DOUBLE_EQ(s->limit, 1.0);
  EXPECT_TRUE(s->slo_sensitive);
}

TEST(ParseStartInstance, BadBodiesNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "body"},
      {"[1]", "body"},
      {R"({"function": "f", "command": ["a"]})", "'id'"},
      {R"({"id": -1, "function": "f", "command": ["a"]})", "'id'"},
      {R"({"id": "x", "function": "f", "command": ["a"]})", "'id'"},
      {R"({"id": 1, "command": ["a"]})", "'function'"},
      {R"({"id": 1, "function": "", "command": ["a"]})", "'function'"},
      {R"({"id": 1, "function": "f"})", "'command'"},
      {R"({"id": 1, "function": "f", "command": []})", "'command'"},
      {R"({"id": 1, "function": "f", "command": ["a", 3]})", "'command[1]'"},
      {R"({"id": 1, "function": "f", "command": ["a"], "env": {"X": 1}})", "'env.X'"},
      {R"({"id": 1, "function": "f", "command": ["a"], "request": 1.5})", "'request'"},
      {R"({"id": 1, "function": "f", "command": ["a"], "request": 0.8, "limit": 0.5})",
       "'request'"},
      {R"({"id": 1, "function": "f", "command": ["a"], "limit": 0})", "'limit'"},
      {R"({"id": 1, "function": "f", "command": ["a"], "restart": "always"})", "'restart'"},
      {R"({"id": 1, "function": "f", "command": ["a"], "kind": "batch"})", "'kind'"},
      {R"({"id": 1, "function": "f", "command": ["a"], "mem_limit_bytes": -5})",
       "'mem_limit_bytes'"},
      {R"({"id": 1, "function": "f", "command": ["a"], "slo_sensitive": 1})", "'slo_sensitive'"},
      {R"({"id": 1, "function": "f", "command": ["a"], "colour": "red"})", "'colour'"},
  };
  for (const auto& [body, field] : cases) {
    absl::StatusOr<StartInstance> s = ParseStartInstance(body);
    ASSERT_FALSE(s.ok()) << body;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(field)) << body;
  }
}

TEST(ParseQuotaUpdate, KeepsAbsentFieldsAndChecksOrder) {
  QuotaUpdate cur{0.2, 0.5, true, 7};
  absl::StatusOr<QuotaUpdate> q = ParseQuotaUpdate(R"({"limit": 0.9})", cur);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_DOUBLE_EQ(q->request, 0.2);
  EXPECT_DOUBLE_EQ(q->limit, 0.9);
  EXPECT_EQ(q->mem_limit_bytes, 7);
  EXPECT_FALSE(ParseQuotaUpdate(R"({"request": 0.7})", cur).ok());
  EXPECT_FALSE(ParseQuotaUpdate(R"({"quota": 0.7})", cur).ok());
}

TEST(ParseTimeQuota, OptionalInZeroOneAndKeptByUpdatesThatOmitIt) {
  absl::StatusOr<StartInstance> s = ParseStartInstance(kGood);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->time_quota, 1.0) << "default: no time slicing";
  s = ParseStartInstance(R"({"id": 1, "function": "f", "command": ["x"], "time_quota": 0.25})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->time_quota, 0.25);
  for (const char* bad : {"0", "1.5", "-0.1", "\"half\""}) {
    const absl::StatusOr<StartInstance> b = ParseStartInstance(absl::StrCat(
        R"({"id": 1, "function": "f", "command": ["x"], "time_quota": )", bad, "}"));
    EXPECT_THAT(b.status().message(), HasSubstr("field 'time_quota'")) << bad;
  }
  const QuotaUpdate cur{0.3, 0.6, true, 0, 0.5};
  absl::StatusOr<QuotaUpdate> q = ParseQuotaUpdate(R"({"time_quota": 0.7})", cur);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_DOUBLE_EQ(q->time_quota, 0.7);
  EXPECT_DOUBLE_EQ(q->limit, 0.6);
  q = ParseQuotaUpdate(R"({"limit": 0.9})", cur);
  EXPECT_DOUBLE_EQ(q->time_quota, 0.5) << "absent: kept";
  EXPECT_THAT(ParseQuotaUpdate(R"({"time_quota": 0})", cur).status().message(),
              HasSubstr("field 'time_quota'"));
}

TEST(ExpandPlaceholders, ReplacesKnownAndRejectsUnknown) {
  const PlaceholderVars vars = {{"PORT", "7101"}, {"GPU", "EMU-1"}};
  EXPECT_EQ(*ExpandPlaceholders("p=${PORT} g=${GPU}${PORT}", vars, "f"), "p=7101 g=EMU-17101");
  EXPECT_EQ(*ExpandPlaceholders("$PORT {PORT}", vars, "f"), "$PORT {PORT}");
  absl::StatusOr<std::string> bad = ExpandPlaceholders("x ${NOPE} y", vars, "command[2]");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("command[2]"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("${NOPE}"));
  EXPECT_FALSE(ExpandPlaceholders("x ${PORT", vars, "f").ok());
}

std::string Lookup(const EnvList& env, const std::string& name) {
  for (const auto& [k, v] : env) {
    if (k == name) return v;
  }
  return "<unset>";
}

TEST(BuildInstanceEnv, EmulatedDeviceAndRequestEnv) {
  StartInstance s = *ParseStartInstance(kGood);
  InstanceContext ctx{7101, "EMU-1", 0, true, "/run/token.sock", "/lib/libsluice_cuda.so",
                      "/emu", "EMU-1", "/build/bin", {}, {}};
  absl::StatusOr<EnvList> env = BuildInstanceEnv(s, ctx);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(Lookup(*env, "PORT"), "7101");
  EXPECT_EQ(Lookup(*env, "SLUICE_FUNCTION"), "resnet");
  EXPECT_EQ(Lookup(*env, "SLUICE_INSTANCE_ID"), "17");
  EXPECT_EQ(Lookup(*env, "SLUICE_GPU_UUID"), "EMU-1");
  EXPECT_EQ(Lookup(*env, "SLUICE_TOKEN_SOCKET"), "/run/token.sock");
  EXPECT_EQ(Lookup(*env, "LD_PRELOAD"), "/lib/libsluice_cuda.so");
  EXPECT_EQ(Lookup(*env, "LD_LIBRARY_PATH"), "/emu");
  EXPECT_EQ(Lookup(*env, "SLUICE_REAL_LIBCUDA"), "/emu/libcuda.so.1");
  EXPECT_EQ(Lookup(*env, "SLUICE_EMU_UUID"), "EMU-1");
  EXPECT_EQ(Lookup(*env, "SLUICE_MODEL_PATH"), "/m");
  EXPECT_EQ(Lookup(*env, "CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(Lookup(*env, "A"), "resnet-17");
  EXPECT_EQ(Lookup(*env, "SLUICE_MAX_BATCH"), "9");  // the request's env overrides ours
  absl::StatusOr<std::vector<std::string>> argv = ExpandCommand(s, PlaceholdersFor(s, ctx));
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_EQ(*argv, (std::vector<std::string>{"/build/bin/x", "--port", "7101"}));
}

TEST(BuildInstanceEnv, RealGpuGetsVisibleDevicesAndUnknownEnvPlaceholderFails) {
  StartInstance s = *ParseStartInstance(R"({"id": 3, "function": "f", "command": ["a"],
                                            "env": {"B": "${WHAT}"}})");
  InstanceContext ctx{7200, "GPU-9", 2, false, "/s", "/l", "", "", "/b", {}, {}};
  absl::StatusOr<EnvList> env = BuildInstanceEnv(s, ctx);
  ASSERT_FALSE(env.ok());
  EXPECT_THAT(std::string(env.status().message()), HasSubstr("env.B"));
  s.env.clear();
  env = BuildInstanceEnv(s, ctx);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(Lookup(*env, "CUDA_VISIBLE_DEVICES"), "2");
  EXPECT_EQ(Lookup(*env, "SLUICE_EMU_UUID"), "<unset>");
}

TEST(ParseStartInstance, GpusListChecksTypesDuplicatesAndTheFirstGpu) {
  const std::string head = R"({"id": 1, "function": "f", "command": ["a"], )";
  absl::StatusOr<StartInstance> s = ParseStartInstance(head + R"("gpus": ["G0", "G1"]})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->gpus, (std::vector<std::string>{"G0", "G1"}));
  EXPECT_TRUE(ParseStartInstance(head + R"("gpu": "G0", "gpus": ["G0", "G1"]})").ok());
  const std::pair<std::string, std::string> bad[] = {
      {R"("gpus": ["G0", "G0"]})", "field 'gpus[1]': duplicate"},
      {R"("gpus": ["G0", 3]})", "field 'gpus[1]'"},
      {R"("gpus": []})", "field 'gpus'"},
      {R"("gpus": "G0"})", "field 'gpus'"},
      {R"("gpu": "G1", "gpus": ["G0", "G1"]})", "field 'gpus[0]': must equal gpu"}};
  for (const auto& [body, want] : bad) {
    absl::StatusOr<StartInstance> r = ParseStartInstance(head + body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(want)) << body;
  }
}

TEST(BuildInstanceEnv, MultiGpuListsEveryUuidAndIndexInOrder) {
  StartInstance s = *ParseStartInstance(R"({"id": 3, "function": "f", "command": ["a"]})");
  InstanceContext ctx{7200, "GPU-9", 2, false, "/s", "/l", "", "", "/b", {}, {}};
  absl::StatusOr<EnvList> env = BuildInstanceEnv(s, ctx);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(Lookup(*env, "SLUICE_GPU_UUIDS"), "GPU-9");  // one GPU: just the first
  ctx.gpu_uuids = {"GPU-9", "GPU-4"};
  ctx.gpu_indices = {2, 0};
  env = BuildInstanceEnv(s, ctx);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(Lookup(*env, "SLUICE_GPU_UUID"), "GPU-9");
  EXPECT_EQ(Lookup(*env, "SLUICE_GPU_UUIDS"), "GPU-9,GPU-4");
  EXPECT_EQ(Lookup(*env, "CUDA_VISIBLE_DEVICES"), "2,0");
}

TEST(MakeEmulatedGpus, UniqueEmuUuidsOf32HexDigits) {
  std::vector<GpuInfo> gpus = MakeEmulatedGpus(3, 54, 1024, 0x123456789abcLL);
  ASSERT_EQ(gpus.size(), 3u);
  std::set<std::string> uuids;
  for (const GpuInfo& g : gpus) {
    uuids.insert(g.uuid);
    EXPECT_EQ(g.uuid.rfind("EMU-", 0), 0u) << g.uuid;
    int hex = 0;
    for (char c : g.uuid.substr(4)) hex += std::isxdigit(static_cast<unsigned char>(c)) != 0;
    EXPECT_EQ(hex, 32) << g.uuid;
    EXPECT_EQ(g.sm_count, 54);
    EXPECT_EQ(g.memory_bytes, int64_t{1024} << 20);
    EXPECT_TRUE(g.emulated);
  }
  EXPECT_EQ(uuids.size(), 3u);
  EXPECT_NE(MakeEmulatedGpus(1, 1, 1, 1)[0].uuid, MakeEmulatedGpus(1, 1, 1, 2)[0].uuid);
}

}  // namespace
}  // namespace sluice::runtime
