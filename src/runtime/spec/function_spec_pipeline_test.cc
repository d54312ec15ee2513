// Tests for the pipeline parts of the spec: both forms parse, every bad-pipeline class is an
// InputError naming file:line and the field, the YAML round trip keeps pipelines and stage_of,
// and ExpandPipeline makes one stage function per stage with the documented names and values.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "runtime/spec/function_spec.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

constexpr char kHead[] = R"(name: bert-pipe
kind: inference
command: ["./stage", "--stage", "${STAGE_INDEX}", "--of", "${STAGE_COUNT}", "--port", "${PORT}"]
model: {path: /models/bert, name: bert}
slo_ms: 400
memory_gib: 2
autoscaling: {min: 1, max: 3}
)";

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<FunctionSpec> spec = ParseFunctionSpec(text, "p.yaml");
  EXPECT_FALSE(spec.ok()) << text;
  if (spec.ok())
    return "";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(spec.status().message());
}

TEST(PipelineSpecTest, CountFormExpandsIntoStageFunctionsTellingEachItsIndex) {
  absl::StatusOr<FunctionSpec> spec =
      ParseFunctionSpec(absl::StrCat(kHead, "pipeline: {stages: 4}\n"), "p.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(spec->pipeline.has_value());
  EXPECT_EQ(spec->pipeline->count, 4);
  EXPECT_TRUE(spec->pipeline->stages.empty());
  absl::StatusOr<std::vector<FunctionSpec>> stages = ExpandPipeline(*spec);
  ASSERT_TRUE(stages.ok()) << stages.status();
  ASSERT_EQ(stages->size(), 4u);
  const FunctionSpec& s2 = (*stages)[2];
  EXPECT_EQ(s2.name, "bert-pipe-s2");
  EXPECT_EQ(s2.model.name, "bert/s2of4");
  EXPECT_EQ(s2.slo_ms, 100.0);
  EXPECT_EQ(s2.command, (std::vector<std::string>{"./stage", "--stage", "2", "--of", "4", "--port",
                                                  "${PORT}"}));
  EXPECT_EQ(s2.env.at("SLUICE_STAGE_INDEX"), "2");
  EXPECT_EQ(s2.env.at("SLUICE_STAGE_COUNT"), "4");
  EXPECT_EQ(s2.env.at("SLUICE_PIPELINE"), "bert-pipe");
  EXPECT_FALSE(s2.pipeline.has_value());
  ASSERT_TRUE(s2.stage_of.has_value());
  EXPECT_EQ(*s2.stage_of, (StageOfSpec{"bert-pipe", 2, 4, 400.0}));
  EXPECT_EQ(s2.autoscaling, (AutoscalingSpec{1, 3}));
  // Each stage spec is itself a valid spec that survives the registry's YAML round trip.
  for (const FunctionSpec& s : *stages) {
    absl::StatusOr<FunctionSpec> again = ParseFunctionSpec(FunctionSpecToYaml(s), "s.yaml");
    ASSERT_TRUE(again.ok()) << again.status() << "\n" << FunctionSpecToYaml(s);
    EXPECT_EQ(*again, s);
  }
}

TEST(PipelineSpecTest, ListFormTakesPerStageOverridesAndOrdersByIndex) {
  const std::string text = absl::StrCat(kHead, R"(pipeline:
  stages:
    - name: tail
      index: 1
      image: reg/tail:1
      memory_gib: 1.5
      slo_ms: 300
      batching: {max_batch: 4}
      autoscaling: {min: 0, max: 8}
      quota: {request: 0.2, limit: 0.5}
      env: {MODE: fast}
    - name: head
      index: 0
)");
  absl::StatusOr<FunctionSpec> spec = ParseFunctionSpec(text, "p.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->pipeline->stages.size(), 2u);
  EXPECT_EQ(spec->pipeline->stages[0].name, "head");
  absl::StatusOr<std::vector<FunctionSpec>> stages = ExpandPipeline(*spec);
  ASSERT_TRUE(stages.ok()) << stages.status();
  const FunctionSpec& head = (*stages)[0];
  const FunctionSpec& tail = (*stages)[1];
  EXPECT_EQ(head.name, "bert-pipe-head");
  EXPECT_EQ(head.command[0], "./stage");
  EXPECT_EQ(head.slo_ms, 200.0);
  EXPECT_EQ(tail.name, "bert-pipe-tail");
  EXPECT_TRUE(tail.command.empty());
  EXPECT_EQ(tail.image, "reg/tail:1");
  EXPECT_EQ(tail.memory_gib, 1.5);
  EXPECT_EQ(tail.slo_ms, 300.0);
  EXPECT_EQ(tail.batching.max_batch, 4);
  EXPECT_EQ(tail.autoscaling, (AutoscalingSpec{0, 8}));
  ASSERT_TRUE(tail.quota.has_value());
  EXPECT_EQ(tail.quota->limit, 0.5);
  EXPECT_EQ(tail.env.at("MODE"), "fast");
  EXPECT_EQ(tail.stage_of->index, 1);
  // The pipeline spec itself round-trips too.
  absl::StatusOr<FunctionSpec> again = ParseFunctionSpec(FunctionSpecToYaml(*spec), "r.yaml");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << FunctionSpecToYaml(*spec);
  EXPECT_EQ(*again, *spec);
}

TEST(PipelineSpecTest, StagesMayCarryTheirOwnCommandWhenThePipelineHasNone) {
  const std::string text = R"(name: p
kind: inference
model: {path: /m}
slo_ms: 100
memory_gib: 1
pipeline:
  stages:
    - {name: a, command: ["./a"]}
    - {name: b, image: reg/b}
)";
  absl::StatusOr<FunctionSpec> spec = ParseFunctionSpec(text, "p.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<FunctionSpec> again = ParseFunctionSpec(FunctionSpecToYaml(*spec), "r.yaml");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *spec);
}

TEST(PipelineSpecTest, BadPipelinesNameTheFieldAndLine) {
  const std::string h = kHead;  // 7 lines; the pipeline block starts on line 8
  EXPECT_EQ(ErrorOf(h + "pipeline: {stages: 0}\n"),
            "p.yaml:8: field 'pipeline.stages': must be in [1, 64], got 0");
  EXPECT_EQ(ErrorOf(h + "pipeline: {stages: []}\n"),
            "p.yaml:8: field 'pipeline.stages': must list at least one stage (stage count 0)");
  EXPECT_EQ(ErrorOf(h + "pipeline: {stages: 2, colour: red}\n"),
            "p.yaml:8: field 'pipeline.colour': unknown key (allowed: stages)");
  EXPECT_EQ(ErrorOf(h + "pipeline: {}\n"), "p.yaml:8: field 'pipeline.stages': is required");
  EXPECT_EQ(ErrorOf(h + "pipeline:\n  stages:\n    - {name: a}\n    - {name: a}\n"),
            "p.yaml:11: field 'pipeline.stages[1].name': duplicate stage name 'a' (also "
            "pipeline.stages[0])");
  EXPECT_EQ(ErrorOf(h + "pipeline:\n  stages:\n    - {name: a, index: 0}\n"
                        "    - {name: b, index: 2}\n"),
            "p.yaml:11: field 'pipeline.stages[1].index': stage 2 of a 2-stage pipeline");
  EXPECT_EQ(ErrorOf(h + "pipeline:\n  stages:\n    - {name: a, index: 0}\n    - {name: b}\n"),
            "p.yaml:10: field 'pipeline.stages': give 'index' on every stage or on none");
  EXPECT_EQ(ErrorOf(h + "pipeline:\n  stages:\n    - {name: a, gpu: 2}\n"),
            "p.yaml:10: field 'pipeline.stages[0].gpu': unknown key (allowed: name, index, "
            "command, image, memory_gib, slo_ms, batching, autoscaling, quota, env)");
  EXPECT_EQ(ErrorOf(h + "pipeline:\n  stages:\n    - {name: a, batching: {max_batch: 1.5}}\n"),
            "p.yaml:10: field 'pipeline.stages[0].batching.max_batch': must be an integer");
  EXPECT_EQ(ErrorOf(h + "pipeline:\n  stages:\n    - {name: A}\n"),
            "p.yaml:10: field 'pipeline.stages[0].name': must be 1-63 chars of [a-z0-9-], "
            "starting and ending alphanumeric");
  EXPECT_EQ(ErrorOf(h + "pipeline:\n  stages:\n    - {index: 0}\n"),
            "p.yaml:10: field 'pipeline.stages[0].name': is required");
  EXPECT_EQ(ErrorOf(h + "pipeline: {stages: 2}\nstage_of: {pipeline: x, index: 0, count: 1, "
                        "pipeline_slo_ms: 1}\n"),
            "p.yaml:9: field 'stage_of': only allowed on an inference function without "
            "'pipeline'");
  EXPECT_EQ(ErrorOf(h + "stage_of: {pipeline: x, index: 3, count: 2, pipeline_slo_ms: 1}\n"),
            "p.yaml:8: field 'stage_of.index': must be in [0, 1], got 3");
  const std::string no_launch =
      "name: p\nkind: inference\nmodel: {path: /m}\nslo_ms: 1\nmemory_gib: 1\n";
  EXPECT_EQ(ErrorOf(no_launch + "pipeline:\n  stages:\n    - {name: a, command: [x]}\n"
                                "    - {name: b}\n"),
            "p.yaml:9: field 'pipeline.stages[1].command': missing: the stage names no command "
            "or image and the pipeline has none");
  EXPECT_THAT(ErrorOf(no_launch + "pipeline: {stages: 2}\n"),
              HasSubstr("field 'command': a pipeline of 'stages: N' runs the top-level"));
  EXPECT_THAT(ErrorOf(absl::StrCat("name: ", std::string(60, 'a'), "\n",
                                   std::string(kHead).substr(std::string(kHead).find('\n') + 1),
                                   "pipeline: {stages: 12}\n")),
              HasSubstr("field 'pipeline.stages': stage function name"));
  EXPECT_THAT(ErrorOf("name: t\nkind: training\ncommand: [x]\nmodel: {path: /m}\nmemory_gib: 1\n"
                      "training: {workers: 1, iterations: 1}\npipeline: {stages: 2}\n"),
              HasSubstr("field 'pipeline': only allowed for kind inference, not training"));
}

TEST(PipelineSpecTest, ExpandRejectsANonPipeline) {
  absl::StatusOr<FunctionSpec> spec = ParseFunctionSpec(kHead, "p.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(ExpandPipeline(*spec).ok());
}

}  // namespace
}  // namespace sluice::runtime
