// Tests of the instance state machine with real processes (/bin/sh) and a fake probe.
#include "runtime/agent/instance_supervisor.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"

#include "runtime/agent/instance_record.h"
#include "runtime/common/loop_env.h"

namespace sluice::runtime {
namespace {

// Answers from tables the test sets; answers are posted to the loop (never inside the call).
class FakeProbe : public InstanceProbe {
 public:
  explicit FakeProbe(common::Env& env) : env_(env) {}
  void SetReady(int port, bool ready) {
    absl::MutexLock l(&mu_);
    ready_[port] = ready;
  }
  void SetInFlight(int port, int64_t n) {
    absl::MutexLock l(&mu_);
    in_flight_[port] = n;
  }
  void CheckReady(int port, absl::AnyInvocable<void(bool)> done) override {
    absl::MutexLock l(&mu_);
    const bool r = ready_[port];
    env_.Post([done = std::move(done), r]() mutable { done(r); });
  }
  void InFlight(int port, absl::AnyInvocable<void(absl::StatusOr<int64_t>)> done) override {
    absl::MutexLock l(&mu_);
    const int64_t n = in_flight_[port];
    env_.Post([done = std::move(done), n]() mutable { done(n); });
  }

 private:
  common::Env& env_;
  absl::Mutex mu_;
  absl::flat_hash_map<int, bool> ready_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, int64_t> in_flight_ ABSL_GUARDED_BY(mu_);
};

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-sup-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    loop_ = *LoopEnv::Create();
    probe_ = std::make_unique<FakeProbe>(*loop_);
    options_.health_interval = absl::Milliseconds(5);
    options_.backoff_min = absl::Milliseconds(5);
    options_.backoff_max = absl::Milliseconds(20);
    options_.kill_grace = absl::Milliseconds(200);
  }
  void TearDown() override {
    sup_.reset();
    loop_->Stop();
    std::filesystem::remove_all(dir_);
  }
  void Start() { sup_ = std::make_unique<InstanceSupervisor>(*loop_, *probe_, options_); }

  InstanceLaunch Shell(const std::string& script, int port, bool restart = true) {
    InstanceLaunch l;
    l.function = "f";
    l.gpu_uuid = "EMU-1";
    l.port = port;
    l.restart_on_failure = restart;
    l.process.argv = {"/bin/sh", "-c", script};
    l.process.env = {{"SUP_DIR", dir_}};
    l.process.log_path = dir_ + "/" + std::to_string(port) + ".log";
    return l;
  }
  // Polls until `pred` holds for instance `id` (the test fails after 20 s).
  InstanceStatus WaitFor(int64_t id, const std::function<bool(const InstanceStatus&)>& pred) {
    for (int i = 0; i < 4000; ++i) {
      std::optional<InstanceStatus> s = sup_->Get(id);
      if (s && pred(*s))
        return *s;
      usleep(5000);
    }
    ADD_FAILURE() << "condition not reached for instance " << id;
    return sup_->Get(id).value_or(InstanceStatus{});
  }
  InstanceStatus WaitState(int64_t id, InstanceState st) {
    return WaitFor(id, [st](const InstanceStatus& s) { return s.state == st; });
  }

  std::string dir_;
  std::unique_ptr<LoopEnv> loop_;
  std::unique_ptr<FakeProbe> probe_;
  SupervisorOptions options_;
  std::unique_ptr<InstanceSupervisor> sup_;
};

TEST_F(SupervisorTest, StartsThenReadyAndLogsOutput) {
  Start();
  absl::StatusOr<InstanceStatus> s = sup_->Add(1, Shell("echo hello-$SUP_DIR; exec sleep 60", 1));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->state, InstanceState::kStarting);
  EXPECT_GT(s->pid, 0);
  probe_->SetReady(1, true);
  InstanceStatus r = WaitState(1, InstanceState::kReady);
  EXPECT_TRUE(r.ready_after.has_value());
  EXPECT_EQ(r.restarts, 0);
  // The fake probe can report ready before the shell has run its echo (a loaded box): wait for
  // the line, bounded, rather than reading the log once.
  std::string text;
  for (int i = 0; i < 500 && text.empty(); ++i) {
    std::ifstream log(dir_ + "/1.log");
    std::stringstream buf;
    buf << log.rdbuf();
    text = buf.str();
    if (text.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  EXPECT_EQ(text, "hello-" + dir_ + "\n");
  EXPECT_EQ(sup_->Add(1, Shell("sleep 60", 2)).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(sup_->PortsInUse(), std::vector<int>{1});
}

TEST_F(SupervisorTest, CrashRestartsWithTheSameIdAndANewPid) {
  Start();
  probe_->SetReady(2, true);
  // The first run exits 3; the restarted one keeps running.
  const std::string script =
      "if [ -e $SUP_DIR/ran ]; then exec sleep 60; else touch $SUP_DIR/ran; sleep 0.2; exit 3; fi";
  const pid_t first = sup_->Add(7, Shell(script, 2))->pid;
  WaitState(7, InstanceState::kReady);
  InstanceStatus r = WaitFor(7, [](const InstanceStatus& s) {
    return s.state == InstanceState::kReady && s.restarts == 1;
  });
  EXPECT_NE(r.pid, first);
  ASSERT_TRUE(r.exit_code.has_value());
  EXPECT_EQ(*r.exit_code, 3);
}

TEST_F(SupervisorTest, TooManyRestartsFail) {
  Start();
  ASSERT_TRUE(sup_->Add(3, Shell("exit 1", 3)).ok());
  InstanceStatus f = WaitState(3, InstanceState::kFailed);
  EXPECT_EQ(f.restarts, options_.max_restarts);
  EXPECT_NE(f.message.find("restarts"), std::string::npos) << f.message;
  EXPECT_TRUE(sup_->PortsInUse().empty());
}

TEST_F(SupervisorTest, RestartNeverCompletesOnZeroAndFailsOtherwise) {
  Start();
  ASSERT_TRUE(sup_->Add(4, Shell("exit 0", 4, /*restart=*/false)).ok());
  ASSERT_TRUE(sup_->Add(5, Shell("exit 2", 5, /*restart=*/false)).ok());
  EXPECT_EQ(WaitState(4, InstanceState::kCompleted).restarts, 0);
  EXPECT_EQ(*WaitState(5, InstanceState::kFailed).exit_code, 2);
  // A terminal id may be reused, and DELETE of a terminal instance forgets it.
  EXPECT_TRUE(sup_->Add(4, Shell("exit 0", 4, false)).ok());
  EXPECT_TRUE(sup_->Drain(5, absl::ZeroDuration()).ok());
  EXPECT_FALSE(sup_->Get(5).has_value());
}

TEST_F(SupervisorTest, FailedHealthChecksRestart) {
  Start();
  probe_->SetReady(6, true);
  const pid_t first = sup_->Add(8, Shell("exec sleep 60", 6))->pid;
  WaitState(8, InstanceState::kReady);
  probe_->SetReady(6, false);
  InstanceStatus r = WaitFor(8, [](const InstanceStatus& s) { return s.restarts == 1; });
  EXPECT_NE(r.message.find("failed health checks"), std::string::npos) << r.message;
  probe_->SetReady(6, true);
  r = WaitState(8, InstanceState::kReady);
  EXPECT_NE(r.pid, first);
}

TEST_F(SupervisorTest, StartTimeoutRestarts) {
  options_.start_timeout = absl::Milliseconds(50);
  Start();
  sup_->Add(9, Shell("exec sleep 60", 9)).IgnoreError();
  InstanceStatus r = WaitFor(9, [](const InstanceStatus& s) { return s.restarts >= 1; });
  EXPECT_NE(r.message.find("start timeout"), std::string::npos) << r.message;
}

TEST_F(SupervisorTest, DrainWaitsForInFlightThenStops) {
  Start();
  probe_->SetReady(10, true);
  probe_->SetInFlight(10, 2);
  sup_->Add(10, Shell("exec sleep 60", 10)).IgnoreError();
  WaitState(10, InstanceState::kReady);
  ASSERT_TRUE(sup_->Drain(10, absl::Seconds(60)).ok());
  InstanceStatus d = WaitFor(10, [](const InstanceStatus& s) { return s.in_flight == 2; });
  EXPECT_EQ(d.state, InstanceState::kDraining);
  EXPECT_GT(d.pid, 0);
  probe_->SetInFlight(10, 0);
  InstanceStatus s = WaitState(10, InstanceState::kStopped);
  EXPECT_EQ(*s.exit_code, 128 + SIGTERM);
  EXPECT_EQ(s.pid, 0);
  EXPECT_EQ(sup_->Drain(99, absl::ZeroDuration()).code(), absl::StatusCode::kNotFound);
}

TEST_F(SupervisorTest, DrainDeadlineThenSigkillForAnInstanceIgnoringSigterm) {
  Start();
  probe_->SetReady(11, true);
  probe_->SetInFlight(11, 5);  // never drains
  sup_->Add(11, Shell("trap '' TERM; while true; do sleep 0.05; done", 11)).IgnoreError();
  WaitState(11, InstanceState::kReady);
  ASSERT_TRUE(sup_->Drain(11, absl::Milliseconds(30)).ok());
  InstanceStatus s = WaitState(11, InstanceState::kStopped);
  EXPECT_EQ(*s.exit_code, 128 + SIGKILL);
}

TEST_F(SupervisorTest, SpawnFailureIsFailedWithTheReason) {
  Start();
  InstanceLaunch l = Shell("", 12);
  l.process.argv = {dir_ + "/no-such-program"};
  absl::StatusOr<InstanceStatus> s = sup_->Add(12, l);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->state, InstanceState::kFailed);
  EXPECT_NE(s->message.find("no-such-program"), std::string::npos) << s->message;
}

TEST_F(SupervisorTest, StopAllTerminatesEverything) {
  Start();
  probe_->SetReady(13, true);
  sup_->Add(13, Shell("exec sleep 60", 13)).IgnoreError();
  sup_->Add(14, Shell("trap '' TERM; while true; do sleep 0.05; done", 14)).IgnoreError();
  WaitState(13, InstanceState::kReady);
  sup_->StopAll();
  for (const InstanceStatus& s : sup_->List()) {
    EXPECT_EQ(s.state, InstanceState::kStopped) << s.id;
    EXPECT_EQ(s.pid, 0);
  }
}

// A process started by an earlier agent (here: spawned directly) is adopted without a spawn or
// a restart, probed to ready, recorded in the state file, and when it dies it is noticed through
// /proc and restarted as this supervisor's own child. A record whose start time does not match
// (a recycled pid) is refused.
TEST_F(SupervisorTest, AdoptsALiveProcessAndRecordsIt) {
  options_.state_path = dir_ + "/instances.json";
  Start();
  InstanceLaunch launch = Shell("exec sleep 60", 40);
  absl::StatusOr<pid_t> pid = SpawnProcess(launch.process);
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::optional<uint64_t> ticks;
  for (int i = 0; i < 200 && !ticks; ++i) {
    ticks = ProcessStartTicks(*pid);
    usleep(1000);
  }
  ASSERT_TRUE(ticks.has_value());
  InstanceRecord wrong{9, *pid, *ticks + 1, 0, launch};
  EXPECT_EQ(sup_->Adopt(wrong).status().code(), absl::StatusCode::kFailedPrecondition);

  absl::StatusOr<InstanceStatus> a = sup_->Adopt({9, *pid, *ticks, 3, launch});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->pid, *pid);
  probe_->SetReady(40, true);
  InstanceStatus r = WaitState(9, InstanceState::kReady);
  EXPECT_EQ(r.pid, *pid);
  EXPECT_EQ(r.restarts, 3);  // kept, none added
  EXPECT_EQ(sup_->Adopt({9, *pid, *ticks, 0, launch}).status().code(),
            absl::StatusCode::kAlreadyExists);
  std::vector<InstanceRecord> saved;
  for (int i = 0; i < 2000 && saved.empty(); ++i) {
    saved = ReadInstanceRecords(options_.state_path).value_or(std::vector<InstanceRecord>());
    usleep(1000);
  }
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].pid, *pid);
  EXPECT_EQ(saved[0].start_ticks, *ticks);

  kill(-*pid, SIGKILL);  // not our child: its zombie goes to whoever reaps it (this test)
  waitpid(*pid, nullptr, 0);
  InstanceStatus again =
      WaitFor(9, [&](const InstanceStatus& s) { return s.pid != 0 && s.pid != *pid; });
  EXPECT_EQ(again.restarts, 4);
  EXPECT_EQ(again.exit_code.value_or(0), -1);  // unknown for an adopted process
}

}  // namespace
}  // namespace sluice::runtime
