# ctest driver: runs the real `sluice` binary on bad input and checks the exit code (2) and that
# stderr names file:line: field. Invoked by src/sim/cli/CMakeLists.txt with -DSLUICE=<binary>
# -DSRC=<source dir> -DWORK=<scratch dir>.
function(expect_failure name yaml expected_rc expected_message)
  set(file "${WORK}/${name}.yaml")
  file(WRITE "${file}" "${yaml}")
  execute_process(COMMAND "${SLUICE}" sim run "${file}" ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "${name}: exit code ${rc}, want ${expected_rc}\nstdout: ${out}\nstderr: ${err}")
  endif()
  string(FIND "${err}" "${file}${expected_message}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "${name}: stderr lacks '${file}${expected_message}':\n${err}")
  endif()
  if(NOT out STREQUAL "")
    message(FATAL_ERROR "${name}: expected nothing on stdout, got:\n${out}")
  endif()
endfunction()

set(head "experiment: t\ncluster: {nodes: 1, gpus_per_node: 2, gpu: A100-40GB}\npolicies: [exclusive]\nfunctions:\n  - name: f\n    model: resnet152\n")
expect_failure(negative_rate "${head}    workload: {kind: poisson, rate_rps: -3}\n" 2
               ":7: field 'functions[0].workload.rate_rps': must be >= 0")
expect_failure(unknown_field "${head}    workload: {kind: poisson, rate_rps: 3}\n    colour: red\n" 2
               ":8: field 'functions[0].colour': unknown field")
expect_failure(quota "${head}    workload: {kind: poisson, rate_rps: 3}\n    quota: {request: 0.9, limit: 0.5}\n" 2
               ":8: field 'functions[0].quota.request': request (0.9) > limit (0.5)")
expect_failure(malformed "${head}    workload: {kind: poisson, rate_rps: 3\n" 2 ":8: malformed YAML")
expect_failure(too_big "${head}    workload: {kind: poisson, rate_rps: 3}\n    memory_gib: 80\n" 2
               ":8: field 'functions[0].memory_gib': needs 80.00 GiB per GPU")

# A missing experiment file is bad input too; a bad --seed is a usage error (CLI11), also 2.
execute_process(COMMAND "${SLUICE}" sim run "${WORK}/no_such.yaml" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "no_such.yaml")
  message(FATAL_ERROR "missing file: exit ${rc}, stderr ${err}")
endif()
execute_process(COMMAND "${SLUICE}" sim run "${SRC}/experiments/quickstart.yaml" --seed -4
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "--seed -4: exit ${rc}, want 2")
endif()

# `sim profile`: a known model prints its quota (exit 0); an unknown one is bad input (exit 2).
execute_process(COMMAND "${SLUICE}" sim profile --model bert-base --kind inference --slo-ms 100 --json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\"request\"" OR NOT out MATCHES "\"trials\"")
  message(FATAL_ERROR "sim profile bert-base: exit ${rc}, stdout ${out}, stderr ${err}")
endif()
execute_process(COMMAND "${SLUICE}" sim profile --model no-such-model --slo-ms 100
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "no-such-model" OR NOT out STREQUAL "")
  message(FATAL_ERROR "sim profile unknown model: exit ${rc}, stdout ${out}, stderr ${err}")
endif()
