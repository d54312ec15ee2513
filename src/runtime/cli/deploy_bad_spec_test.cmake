# ctest driver: `sluice deploy` of bad specs needs no daemon: the spec is validated locally
# first, so the exit code is 2 and stderr names file:line and the field. Invoked by
# src/runtime/cli/CMakeLists.txt with -DSLUICE=<binary> -DWORK=<scratch dir>.
set(head "name: clf\nkind: inference\ncommand: [\"./clf\", \"--port\", \"\${PORT}\"]\nmodel: {path: /m}\nslo_ms: 100\nmemory_gib: 1\n")
function(expect_bad name yaml expected)
  set(file "${WORK}/${name}.yaml")
  file(WRITE "${file}" "${yaml}")
  # A controller address nobody listens on: reaching it would be a different failure (exit 1).
  execute_process(COMMAND "${SLUICE}" deploy "${file}" --controller 127.0.0.1:1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "${name}: exit code ${rc}, want 2\nstdout: ${out}\nstderr: ${err}")
  endif()
  string(FIND "${err}" "${file}${expected}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "${name}: stderr lacks '${file}${expected}':\n${err}")
  endif()
  if(NOT out STREQUAL "")
    message(FATAL_ERROR "${name}: expected nothing on stdout, got:\n${out}")
  endif()
endfunction()

expect_bad(fractional_batch "${head}batching: {max_batch: 8.5}\n"
           ":7: field 'batching.max_batch': must be an integer")
expect_bad(unknown_key "${head}colour: red\n" ":7: field 'colour': unknown key")
# Pipelines (issue 11): stage count 0, duplicate stage names, a missing stage, an unknown key.
expect_bad(pipeline_zero "${head}pipeline: {stages: 0}\n"
           ":7: field 'pipeline.stages': must be in [1, 64], got 0")
expect_bad(pipeline_duplicate "${head}pipeline:\n  stages:\n    - {name: a}\n    - {name: a}\n"
           ":10: field 'pipeline.stages[1].name': duplicate stage name 'a'")
expect_bad(pipeline_missing_stage
           "${head}pipeline:\n  stages:\n    - {name: a, index: 0}\n    - {name: b, index: 2}\n"
           ":10: field 'pipeline.stages[1].index': stage 2 of a 2-stage pipeline")
expect_bad(pipeline_unknown_key "${head}pipeline: {stages: 2, replicas: 3}\n"
           ":7: field 'pipeline.replicas': unknown key")

# A good spec passes validation and then fails to reach the controller: exit 1, not 2.
file(WRITE "${WORK}/good.yaml" "${head}")
execute_process(COMMAND "${SLUICE}" deploy "${WORK}/good.yaml" --controller 127.0.0.1:1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "sluice deploy:")
  message(FATAL_ERROR "good spec, no controller: exit ${rc}, stderr ${err}")
endif()
# A missing file is bad input too.
execute_process(COMMAND "${SLUICE}" deploy "${WORK}/no_such.yaml" RESULT_VARIABLE rc
                ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "no_such.yaml")
  message(FATAL_ERROR "missing file: exit ${rc}, stderr ${err}")
endif()
