// Multi-GPU instances through the controller: a spec with `gpus: 2` is placed on two GPUs of
// one node and the StartInstance the agent receives names both (docs/platform.md "Agent API");
// after a controller restart the re-adopted instance holds both GPUs again.
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/controller/testing/controller_fixture.h"

namespace sluice::runtime {
namespace {

// The GPUs of a started instance: two distinct uuids of the fake node, the first being `gpu`.
void ExpectTwoGpusOfTheNode(const FakeInstance& i) {
  ASSERT_EQ(i.gpus.size(), 2u) << "instance " << i.id;
  EXPECT_EQ(i.gpus[0], i.gpu);
  EXPECT_NE(i.gpus[0], i.gpus[1]);
  const std::set<std::string> node = {"EMU-FAKE-0", "EMU-FAKE-1"};
  for (const std::string& uuid : i.gpus) EXPECT_TRUE(node.contains(uuid)) << uuid;
}

TEST_F(ControllerTest, TwoGpuSpecStartsInstancesNamingBothGpusAndReadoptsThem) {
  dir_ = absl::StrCat(::testing::TempDir(), "/controller_multigpu_test_", getpid());
  std::filesystem::create_directories(dir_);
  options_.store_path = dir_ + "/controller.db";
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("wide", 1, 1, "gpus: 2\n")).status, 201);
  ASSERT_TRUE(WaitState("wide", "ready")) << Describe("wide").dump();
  ASSERT_TRUE(WaitFor([&] { return RoutedInstances("wide") == 1; }));
  const std::vector<FakeInstance> started = agent_->instances();
  ASSERT_EQ(started.size(), 2u);  // the profiling instance, then the serving one
  for (const FakeInstance& i : started) ExpectTwoGpusOfTheNode(i);

  // A restarted controller re-adopts the instance on both GPUs: the node has no room left for
  // a second 2-GPU instance of full request, so scaling to 2 must be unschedulable.
  daemon_->Stop();
  daemon_.reset();
  StartDaemon();
  ASSERT_EQ(Describe("wide")["instances"].size(), 1u);
  ASSERT_EQ(Deploy(InferenceSpec("other", 1, 1, "quota: {request: 0.9, limit: 1.0}\n")).status,
            201);
  ASSERT_TRUE(WaitState("other", "ready")) << Describe("other").dump();
  EXPECT_EQ(Route("other")["state"], "unschedulable") << Describe("other").dump();
}

}  // namespace
}  // namespace sluice::runtime
