// The Python-literal parser, the instance-list parser (fixtures, every bad-input class, the real
// Dilu lists when ../shared/data is present) and the synthetic generator's shape.
#include "sim/placement/instance_list.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sim/placement/py_literal.h"
#include "sim/placement/synthetic_instances.h"
#include "sim/workload/testing/fixtures.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

TEST(PyLiteralTest, ParsesNestedDictsListsStringsAndNumbers) {
  absl::StatusOr<PyValue> v = ParsePyLiteral(
      R"( {'a': [1, -2, 3.5, 1e-05,], "b": {'c': 'it\'s'}, 'd': 0.42000000000000004, 'e': []} )");
  ASSERT_TRUE(v.ok()) << v.status();
  const PyDict& d = v->AsDict();
  EXPECT_EQ(d.keys, (std::vector<std::string>{"a", "b", "d", "e"}));
  const PyList& a = d.Find("a")->AsList();
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].AsInt(), 1);
  EXPECT_EQ(a[1].AsInt(), -2);
  EXPECT_TRUE(a[2].is_float());
  EXPECT_DOUBLE_EQ(a[3].AsNumber(), 1e-05);
  EXPECT_EQ(d.Find("b")->AsDict().Find("c")->AsString(), "it's");
  EXPECT_EQ(d.Find("d")->AsNumber(), 0.42000000000000004);  // round-trips Python's repr exactly
  EXPECT_NE(d.Find("d")->AsNumber(), 0.42);
  EXPECT_TRUE(d.Find("e")->AsList().empty());
  EXPECT_EQ(d.Find("zz"), nullptr);
}

TEST(PyLiteralTest, RejectsWhatIsNotInTheSubsetWithAColumn) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{'a': True}", "column 7: unexpected character 'T'"},
      {"{'a': None}", "column 7"},
      {"(1, 2)", "column 1"},
      {"{'a': 'x", "unterminated string"},
      {"{'a': 1, 'a': 2}", "column 10: repeated key 'a'"},
      {"{1: 2}", "expected a string key"},
      {"{'a' 1}", "expected ':'"},
      {"[1 2]", "expected ',' or ']'"},
      {"{'a': 1} x", "unexpected text after the literal"},
      {"{'a': 99999999999999999999}", "out-of-range integer"},
      {"{'a': 1.2.3}", "malformed number"},
      {"{'a': '\\x41'}", "unsupported escape"},
      {"", "expected a value"},
      {std::string(33, '[') + std::string(33, ']'), "nesting deeper than 32"},
  };
  for (const auto& [text, want] : cases) {
    absl::StatusOr<PyValue> v = ParsePyLiteral(text);
    EXPECT_FALSE(v.ok()) << text;
    EXPECT_THAT(v.status().message(), HasSubstr(want)) << text;
  }
}

constexpr char kThreeLines[] =
    "{'Time': '2024-06-19 15:44:30', 'Action': 'start', 'Instance': {'service_name': "
    "'training-a', 'type': 'training', 'gpu_num': 2, 'sm_requests': 0.5, 'sm_limits': 0.7, "
    "'memory': [30, 30]}}\n"
    "\n"
    "{'Time': '2024-06-19 15:44:31', 'Action': 'start', 'Instance': {'service_name': 'llm-b', "
    "'type': 'llm-inference', 'gpu_num': 1, 'sm_requests': 0.4, 'sm_limits': 0.65, "
    "'memory': [24]}}\n"
    "{'Time': '2024-06-19 15:46:31', 'Action': 'delete', 'Instance': {'service_name': 'llm-b', "
    "'type': 'llm-inference', 'gpu_num': 1, 'sm_requests': 0.4, 'sm_limits': 0.65, "
    "'memory': [24]}}\n";

TEST(InstanceListTest, ParsesEventsWithTheirLines) {
  absl::StatusOr<std::vector<PlacementEvent>> events = ParseInstanceList(kThreeLines, "f.txt");
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 3u);
  const PlacementEvent& t = (*events)[0];
  EXPECT_EQ(t.line, 1);
  EXPECT_EQ(t.action, InstanceAction::kStart);
  EXPECT_EQ(t.instance.service_name, "training-a");
  EXPECT_EQ(t.instance.kind, core::FunctionKind::kTraining);
  EXPECT_EQ(t.instance.gpus, 2);
  EXPECT_DOUBLE_EQ(t.instance.sm_request, 0.5);
  EXPECT_DOUBLE_EQ(t.instance.sm_limit, 0.7);
  EXPECT_DOUBLE_EQ(t.instance.memory_gib, 30);
  EXPECT_EQ((*events)[1].line, 3);  // the blank line 2 is skipped
  EXPECT_EQ((*events)[1].instance.kind, core::FunctionKind::kLlmInference);
  EXPECT_EQ((*events)[2].action, InstanceAction::kDelete);
  EXPECT_EQ((*events)[2].time - (*events)[1].time, absl::Minutes(2));
  EXPECT_TRUE(OrderAndCheckEvents(*events, "f.txt").ok());
}

// One line with `instance` as the Instance dict.
std::string Line(absl::string_view instance, absl::string_view time = "2024-06-19 15:44:30",
                 absl::string_view action = "start") {
  return absl::StrCat("{'Time': '", time, "', 'Action': '", action, "', 'Instance': ", instance,
                      "}\n");
}

constexpr char kGood[] =
    "{'service_name': 'x', 'type': 'inference', 'gpu_num': 1, 'sm_requests': 0.2, 'sm_limits': "
    "0.4, 'memory': [3]}";

TEST(InstanceListTest, EveryBadFieldIsNamedWithFileAndLine) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string s = kGood;
    s.replace(s.find(from), from.size(), to);
    return Line(s);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Line(kGood, "2024-06-19"), "field 'Time': expected 'YYYY-mm-dd HH:MM:SS'"},
      {Line(kGood, "2024-06-19 15:44:30", "stop"), "field 'Action': must be 'start' or 'delete'"},
      {Line("[1]"), "field 'Instance': must be a dict"},
      {Line(kGood) + "{'Time': 1, 'Action': 'start', 'Instance': {}}\n", "f.txt:2: field 'Time'"},
      {"{'Time': '2024-06-19 15:44:30', 'Action': 'start'}\n", "field 'Instance': missing field"},
      {with("'memory': [3]", "'memory': [3], 'extra': 1"), "field 'Instance.extra': unknown"},
      {with("'service_name': 'x'", "'service_name': ''"), "Instance.service_name': must not be"},
      {with("'service_name': 'x'", "'service_name': 7"),
       "Instance.service_name': must be a string"},
      {with("'inference'", "'batch'"), "field 'Instance.type': unknown type 'batch'"},
      {with("'gpu_num': 1", "'gpu_num': 0"), "field 'Instance.gpu_num'"},
      {with("'gpu_num': 1", "'gpu_num': 1.0"), "field 'Instance.gpu_num'"},
      {with("'sm_requests': 0.2", "'sm_requests': 0"), "field 'Instance.sm_requests': must be in"},
      {with("0.4,", "1.2,"), "field 'Instance.sm_limits': must be in (0, 1]"},
      {with("'sm_requests': 0.2", "'sm_requests': 0.5"), "'Instance.sm_limits': must be >="},
      {with("'memory': [3]", "'memory': 3"), "field 'Instance.memory': must be a list"},
      {with("'memory': [3]", "'memory': [3, 3]"), "field 'Instance.memory': has 2 entries"},
      {with("'memory': [3]", "'memory': [-3]"), "field 'Instance.memory[0]': must be in"},
      {with("'gpu_num': 1", "'gpu_num': 2"), "field 'Instance.memory': has 1 entries"},
      {Line("{'service_name': 'x', 'type': 'training', 'gpu_num': 2, 'sm_requests': 0.2, "
            "'sm_limits': 0.4, 'memory': [30, 25]}"),
       "field 'Instance.memory[1]': differs from memory[0]"},
      {"{'Time': '2024-06-19 15:44:30', 'Action': 'start', 'Instance': {'a': True}}\n",
       "f.txt:1: column"},
  };
  for (const auto& [text, want] : cases) {
    absl::StatusOr<std::vector<PlacementEvent>> events = ParseInstanceList(text, "f.txt");
    ASSERT_FALSE(events.ok()) << text;
    EXPECT_EQ(events.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(events.status().message(), HasSubstr("f.txt:")) << text;
    EXPECT_THAT(events.status().message(), HasSubstr(want)) << text;
  }
}

TEST(InstanceListTest, OrderingIsStableAndIdentityIsByServiceName) {
  const std::string start_x = Line(kGood, "2024-06-19 15:44:30", "start");
  const std::string delete_x = Line(kGood, "2024-06-19 15:45:30", "delete");
  // Out of order in the file: the delete comes first but is later in time. Then x restarts.
  const std::string text = delete_x + start_x + Line(kGood, "2024-06-19 15:45:30", "start");
  absl::StatusOr<std::vector<PlacementEvent>> events = ParseInstanceList(text, "f.txt");
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_TRUE(OrderAndCheckEvents(*events, "f.txt").ok());
  EXPECT_EQ((*events)[0].line, 2);
  EXPECT_EQ((*events)[1].line, 1);  // same second as line 3: file order kept
  EXPECT_EQ((*events)[2].line, 3);

  auto check = [](const std::string& t) {
    absl::StatusOr<std::vector<PlacementEvent>> e = ParseInstanceList(t, "g.txt");
    EXPECT_TRUE(e.ok());
    return OrderAndCheckEvents(*e, "g.txt");
  };
  EXPECT_THAT(check(start_x + start_x).message(),
              HasSubstr("g.txt:2: field 'Instance.service_name': 'x' starts again"));
  EXPECT_THAT(check(delete_x).message(), HasSubstr("g.txt:1: field 'Instance.service_name'"));
  EXPECT_TRUE(check(start_x).ok());  // never deleted: stays live
}

TEST(InstanceListTest, MissingFileIsNotFound) {
  absl::StatusOr<std::vector<PlacementEvent>> e = LoadInstanceList("/nonexistent/instances.txt");
  EXPECT_EQ(e.status().code(), absl::StatusCode::kNotFound);
}

struct Census {
  std::map<core::FunctionKind, int> starts;
  int deletes = 0;
};

Census Count(const std::vector<PlacementEvent>& events) {
  Census c;
  for (const PlacementEvent& e : events) {
    if (e.action == InstanceAction::kStart)
      ++c.starts[e.instance.kind];
    if (e.action == InstanceAction::kDelete)
      ++c.deletes;
  }
  return c;
}

// The shipped lists: N starts in the ratio 2 : 2 : 6 (but see 1600), 0.7 N deletes, 1.7 N lines.
TEST(InstanceListTest, RealDiluListsHaveTheDocumentedShape) {
  const std::string dir = testing::SharedDataDir() + "/dilu-artifacts/sim_instances";
  int found = 0;
  for (int n : {100, 200, 400, 800, 1600, 3200}) {
    const std::string path = absl::StrCat(dir, "/instances-", n, ".txt.xz");
    absl::StatusOr<std::vector<PlacementEvent>> events = LoadInstanceList(path);
    if (absl::IsNotFound(events.status()))
      continue;
    ++found;
    ASSERT_TRUE(events.ok()) << events.status();
    EXPECT_EQ(static_cast<int>(events->size()), n * 17 / 10) << path;
    EXPECT_EQ(events->back().line, n * 17 / 10) << path;
    const Census c = Count(*events);
    // instances-1600 came from another version of the generator: LLM 0.1 N, other 0.7 N.
    const int llm = n == 1600 ? n / 10 : n / 5;
    EXPECT_EQ(c.starts.at(core::FunctionKind::kTraining), n / 5) << path;
    EXPECT_EQ(c.starts.at(core::FunctionKind::kLlmInference), llm) << path;
    EXPECT_EQ(c.starts.at(core::FunctionKind::kInference), n * 4 / 5 - llm) << path;
    EXPECT_EQ(c.deletes, n * 7 / 10) << path;
  }
  if (found == 0)
    GTEST_SKIP() << "no Dilu instance lists under " << dir;
}

TEST(SyntheticInstancesTest, HasTheGeneratorsShape) {
  absl::StatusOr<std::vector<PlacementEvent>> events = GenerateSyntheticInstances({1000, 7});
  ASSERT_TRUE(events.ok()) << events.status();
  const Census c = Count(*events);
  EXPECT_EQ(c.starts.at(core::FunctionKind::kTraining), 200);
  EXPECT_EQ(c.starts.at(core::FunctionKind::kLlmInference), 200);
  EXPECT_EQ(c.starts.at(core::FunctionKind::kInference), 600);
  EXPECT_EQ(c.deletes, 700);
  std::map<std::string, absl::Time> started;
  std::set<std::string> names;
  for (const PlacementEvent& e : *events) {
    const InstanceSpec& s = e.instance;
    EXPECT_GE(s.sm_limit, s.sm_request + 0.2 - 1e-9) << s.service_name;
    EXPECT_LE(s.sm_limit, 1.0);
    if (e.action == InstanceAction::kStart) {
      names.insert(s.service_name);
      started[s.service_name] = e.time;
      continue;
    }
    const int64_t delay_min = absl::ToInt64Minutes(e.time - started.at(s.service_name));
    if (s.kind == core::FunctionKind::kTraining) {
      EXPECT_TRUE(delay_min >= 10 && delay_min <= 15) << delay_min;
      EXPECT_TRUE(s.gpus == 2 || s.gpus == 4);
      EXPECT_TRUE(s.sm_request >= 0.4 && s.sm_request <= 0.8);
    } else {
      EXPECT_TRUE(delay_min >= 1 && delay_min <= 3) << delay_min;
      EXPECT_EQ(s.gpus, 1);
    }
    if (s.kind == core::FunctionKind::kLlmInference) {
      EXPECT_TRUE(s.memory_gib >= 20 && s.memory_gib <= 30);
    }
    if (s.kind == core::FunctionKind::kInference) {
      EXPECT_TRUE(s.memory_gib >= 3 && s.memory_gib <= 10);
      EXPECT_TRUE(s.sm_request >= 0.2 && s.sm_request <= 0.4);
    }
  }
  EXPECT_EQ(names.size(), 1000u);
}

TEST(SyntheticInstancesTest, SeedDeterminesTheList) {
  auto a = GenerateSyntheticInstances({300, 1});
  auto b = GenerateSyntheticInstances({300, 1});
  auto c = GenerateSyntheticInstances({300, 2});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto key = [](const std::vector<PlacementEvent>& v) {
    std::string k;
    for (const PlacementEvent& e : v) {
      absl::StrAppend(&k, absl::ToUnixSeconds(e.time), e.instance.service_name,
                      e.instance.sm_request, e.instance.sm_limit, e.instance.memory_gib, ";");
    }
    return k;
  };
  EXPECT_EQ(key(*a), key(*b));
  EXPECT_NE(key(*a), key(*c));
  EXPECT_FALSE(GenerateSyntheticInstances({0, 1}).ok());
  EXPECT_FALSE(GenerateSyntheticInstances({2000000, 1}).ok());
}

}  // namespace
}  // namespace sluice::sim
