// The example functions as their users see them: each spec parses, and the built binaries run
// as subprocesses (on the emulated device for the GPU ones) and answer correctly over HTTP.
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

#include "nlohmann/json.hpp"
#include "runtime/common/subprocess.h"
#include "runtime/http/http.h"
#include "runtime/spec/function_spec.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string SourceDir() {
  const char* s = std::getenv("SLUICE_SOURCE_DIR");
  return s != nullptr ? s : ".";
}

TEST(ExampleSpecsTest, EveryExampleSpecParsesAndNamesABuiltProgram) {
  int specs = 0;
  for (const auto& dir : fs::directory_iterator(SourceDir() + "/examples")) {
    if (!dir.is_directory()) {
      continue;
    }
    for (const auto& f : fs::directory_iterator(dir.path())) {
      if (f.path().extension() != ".yaml") {
        continue;
      }
      ++specs;
      absl::StatusOr<FunctionSpec> spec = LoadFunctionSpec(f.path().string());
      ASSERT_TRUE(spec.ok()) << spec.status();
      // A directory's specs are named after it ("llm", or a variant such as "llm-pd").
      EXPECT_TRUE(absl::StartsWith(spec->name, dir.path().filename().string())) << spec->name;
      const std::string program = spec->command.back();
      ASSERT_NE(program.find("${SLUICE_BIN_DIR}/sluice-example-"), std::string::npos) << program;
      const std::string built =
          absl::StrReplaceAll(program, {{"${SLUICE_BIN_DIR}", SLUICE_BIN_DIR}});
      const bool gpu_example = built.find("-echo") == std::string::npos;
      if (spec->command.size() == 1 && (SLUICE_GPU_EXAMPLES || !gpu_example)) {
        EXPECT_EQ(access(built.c_str(), X_OK), 0) << built;
      }
    }
  }
  EXPECT_GE(specs, 4);
}

// A function process on 127.0.0.1:<ephemeral>, on a private emulated device, killed and its
// device segment removed on every path.
class FunctionProcess {
 public:
  // `preload`: under the interception library (as the agent starts instances), which then
  // loads the emulated driver itself.
  FunctionProcess(const std::string& binary, std::vector<std::pair<std::string, std::string>> env,
                  bool preload = false) {
    static int counter = 0;
    char uuid[64];
    std::snprintf(uuid, sizeof(uuid), "EMU-%08x-e8a3-0000-0000-%012x", unsigned(getpid()),
                  ++counter);
    uuid_ = uuid;
    SpawnOptions o;
    o.argv = {std::string(SLUICE_BIN_DIR) + "/" + binary};
    o.env = {{"PORT", "0"}, {"LD_LIBRARY_PATH", SLUICE_EMULATED_DIR}, {"SLUICE_EMU_UUID", uuid_}};
    o.env.insert(o.env.end(), env.begin(), env.end());
    o.unset_env = {"SLUICE_GPU_UUID", "SLUICE_TOKEN_SOCKET", "SLUICE_FUNCTION"};
    if (preload) {
      o.env.push_back({"LD_PRELOAD", SLUICE_INTERCEPT_LIB});
      o.env.push_back({"SLUICE_REAL_LIBCUDA", std::string(SLUICE_EMULATED_DIR) + "/libcuda.so.1"});
    } else {
      o.unset_env.push_back("LD_PRELOAD");
    }
    auto p = Subprocess::Spawn(o);
    EXPECT_TRUE(p.ok()) << p.status();
    if (p.ok()) {
      process_ = *std::move(p);
    }
  }
  ~FunctionProcess() {
    process_.reset();  // SIGKILL if still running
    shm_unlink(("/sluice-emu-" + uuid_).c_str());
  }
  // Reads stdout until {"event": event}; null json on end of output or timeout.
  json ReadEvent(const std::string& event) {
    while (process_ != nullptr) {
      absl::StatusOr<std::string> line = process_->ReadLine(absl::Seconds(60));
      if (!line.ok()) {
        return json();
      }
      json j = json::parse(*line, nullptr, false);
      if (!j.is_discarded() && j.value("event", "") == event) {
        return j;
      }
    }
    return json();
  }
  bool WaitReady() {
    json j = ReadEvent("ready");
    if (j.is_null()) {
      return false;
    }
    base_ = absl::StrCat("http://127.0.0.1:", j["port"].get<int>());
    return true;
  }
  absl::StatusOr<http::Response> Post(const std::string& path, const json& body) {
    return http::Post(base_ + path, body.dump());
  }
  int Stop() {
    process_->Kill(SIGTERM);
    absl::StatusOr<int> code = process_->Wait();
    return code.ok() ? *code : -1;
  }
  Subprocess& process() { return *process_; }

 private:
  std::string uuid_, base_;
  std::unique_ptr<Subprocess> process_;
};

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sluice-examples-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

json Row(const std::string& id, std::vector<int64_t> shape, std::vector<float> data) {
  return {{"id", id},
          {"inputs", {{{"name", "x"}, {"shape", shape}, {"datatype", "FP32"}, {"data", data}}}}};
}

TEST(ExampleProcessTest, EchoReturnsItsInputsAndDrainsOnSigterm) {
  FunctionProcess echo("sluice-example-echo", {});
  ASSERT_TRUE(echo.WaitReady());
  json req = Row("e1", {2}, {1.5f, -2});
  absl::StatusOr<http::Response> r = echo.Post("/v2/models/echo/infer", req);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["outputs"], req["inputs"]);
  EXPECT_EQ(j["id"], "e1");
  EXPECT_EQ(echo.Stop(), 0);
}

// The process state letter of `pid` from /proc ('Z' zombie), or 0 when the process is gone.
char ProcState(pid_t pid) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  if (!std::getline(f, stat)) {
    return 0;
  }
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : 0;
}

// An instance the node agent started (SLUICE_INSTANCE_ID set) must not run on unsupervised when
// the agent dies: the SDK asks for SIGTERM on its parent's death and then drains and exits.
TEST(ExampleProcessTest, AnAgentStartedInstanceExitsWhenItsParentDies) {
  SpawnOptions o;
  // The shell stands for the agent: it starts the instance, prints its pid and dies.
  o.argv = {"/bin/sh", "-c", "\"$0\" & echo \"pid $!\"; sleep 1",
            std::string(SLUICE_BIN_DIR) + "/sluice-example-echo"};
  o.env = {{"PORT", "0"}, {"SLUICE_INSTANCE_ID", "7"}};
  o.unset_env = {"LD_PRELOAD", "SLUICE_GPU_UUID", "SLUICE_TOKEN_SOCKET"};
  absl::StatusOr<std::unique_ptr<Subprocess>> sh = Subprocess::Spawn(o);
  ASSERT_TRUE(sh.ok()) << sh.status();
  pid_t pid = 0;
  for (int i = 0; i < 4 && pid == 0; ++i) {
    absl::StatusOr<std::string> line = (*sh)->ReadLine(absl::Seconds(30));
    ASSERT_TRUE(line.ok()) << line.status();
    if (absl::StartsWith(*line, "pid ")) {
      pid = static_cast<pid_t>(std::atoi(line->c_str() + 4));
    }
  }
  ASSERT_GT(pid, 0);
  EXPECT_TRUE((*sh)->Wait().ok());  // the "agent" is gone
  char state = ProcState(pid);
  for (int i = 0; i < 100 && state != 0 && state != 'Z'; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    state = ProcState(pid);
  }
  const bool still_running = state != 0 && state != 'Z';
  if (still_running) {
    kill(pid, SIGKILL);
  }
  EXPECT_FALSE(still_running) << "instance " << pid << " outlived its parent (state " << state
                              << ")";
}

// Hand-checked weights: h = relu(I x + [0, -1]); logits = diag(1, 2) h + [0.5, 0].
constexpr char kWeights[] = R"({"in_dim": 2, "hidden": 2, "classes": 2,
  "w1": [1, 0, 0, 1], "b1": [0, -1], "w2": [1, 0, 0, 2], "b2": [0.5, 0]})";

void ExpectScores(const json& out, std::vector<std::vector<float>> logits,
                  std::vector<int64_t> classes) {
  ASSERT_EQ(out["outputs"][0]["name"], "scores");
  std::vector<float> want;
  for (const auto& l : logits) {
    const float z = std::exp(l[0]) + std::exp(l[1]);
    want.push_back(std::exp(l[0]) / z);
    want.push_back(std::exp(l[1]) / z);
  }
  const std::vector<float> got = out["outputs"][0]["data"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  }
  EXPECT_EQ(out["outputs"][1]["data"].get<std::vector<int64_t>>(), classes);
}

#define SLUICE_REQUIRE_GPU_EXAMPLES()                                  \
  if (!SLUICE_GPU_EXAMPLES) {                                          \
    GTEST_SKIP() << "GPU examples not built (no cuda.h at configure)"; \
  }

class ClassifierTest : public ::testing::TestWithParam<bool> {};

TEST_P(ClassifierTest, ComputesTheMlpOnTheEmulatedDevice) {
  SLUICE_REQUIRE_GPU_EXAMPLES();
  if (GetParam() && std::string(SLUICE_INTERCEPT_LIB).empty()) {
    GTEST_SKIP() << "no libsluice_cuda";
  }
  TempDir tmp;
  const std::string model = tmp.path() + "/weights.json";
  std::ofstream(model) << kWeights;
  FunctionProcess c("sluice-example-classifier",
                    {{"SLUICE_MODEL_PATH", model},
                     {"SLUICE_EXAMPLE_BLOCKS_BASE", "10"},
                     {"SLUICE_EXAMPLE_BLOCKS_PER_ITEM", "1"}},
                    /*preload=*/GetParam());
  ASSERT_TRUE(c.WaitReady());
  json batch = {
      {"requests",
       {Row("a", {2, 2}, {3, 4, -1, 2}), Row("b", {2}, {5, 0.5f}), Row("bad", {3}, {1, 2, 3})}}};
  absl::StatusOr<http::Response> r = c.Post("/sluice/v1/batch", batch);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ExpectScores(j["responses"][0], {{3.5f, 6}, {0.5f, 2}}, {1, 1});
  ExpectScores(j["responses"][1], {{5.5f, 0}}, {0});
  EXPECT_NE(j["responses"][2]["error"].get<std::string>().find("shape"), std::string::npos);
  r = c.Post("/sluice/v1/trial", {{"batch", 4}, {"iterations", 3}});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_GT(json::parse(r->body)["memory_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(c.Stop(), 0);
}

INSTANTIATE_TEST_SUITE_P(DirectAndIntercepted, ClassifierTest, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Intercepted" : "Direct"; });

TEST(ExampleProcessTest, ClassifierWithSeededWeightsAnswersKserveInfer) {
  SLUICE_REQUIRE_GPU_EXAMPLES();
  FunctionProcess c("sluice-example-classifier",
                    {{"SLUICE_MODEL_PATH", "seed:3"}, {"SLUICE_EXAMPLE_BLOCKS_BASE", "10"}});
  ASSERT_TRUE(c.WaitReady());
  absl::StatusOr<http::Response> r =
      c.Post("/v2/models/classifier/infer", Row("s", {16}, std::vector<float>(16, 0.5f)));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  const std::vector<float> scores =
      json::parse(r->body)["outputs"][0]["data"].get<std::vector<float>>();
  ASSERT_EQ(scores.size(), 4u);
  float sum = 0;
  for (float s : scores) {
    sum += s;
  }
  EXPECT_NEAR(sum, 1.0f, 1e-5);
  EXPECT_EQ(c.Stop(), 0);
}

TEST(ExampleProcessTest, TrainerLossFallsAndItExitsZero) {
  SLUICE_REQUIRE_GPU_EXAMPLES();
  FunctionProcess t("sluice-example-trainer", {{"SLUICE_ITERATIONS", "60"},
                                               {"SLUICE_LOG_EVERY", "10"},
                                               {"SLUICE_EXAMPLE_BLOCKS_BASE", "10"}});
  std::vector<double> losses;
  for (json j = t.ReadEvent("step"); !j.is_null(); j = t.ReadEvent("step")) {
    losses.push_back(j["loss"].get<double>());
    if (losses.size() == 6) {
      break;  // steps 0, 10, ..., 50
    }
  }
  ASSERT_EQ(losses.size(), 6u);
  for (size_t i = 1; i < losses.size(); ++i) {
    EXPECT_LT(losses[i], losses[i - 1]) << i;
  }
  EXPECT_LT(losses.back(), 0.05 * losses.front());
  json done = t.ReadEvent("done");
  ASSERT_FALSE(done.is_null());
  EXPECT_EQ(done["iterations"], 60);
  absl::StatusOr<int> code = t.process().Wait();
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0);
}

}  // namespace
}  // namespace sluice::runtime
