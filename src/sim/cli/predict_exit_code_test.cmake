# ctest driver for `sluice sim predict` / `predictor-eval`: bad input exits 2 with a message that
# names the field; with the RaPP table present, also an unknown model, a configuration outside
# the trained data, and the JSON keys. Invoked with -DSLUICE=<binary> -DSRC=<source dir>; the
# binary is run with SLUICE_DATA_DIR set (the test's working directory is the build tree).
if(DEFINED ENV{SLUICE_DATA_DIR})
  set(data "$ENV{SLUICE_DATA_DIR}")
else()
  set(data "${SRC}/../shared/data")
endif()
function(expect_rc name expected_rc expected_message)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "SLUICE_DATA_DIR=${data}" "${SLUICE}" sim ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "${name}: exit code ${rc}, want ${expected_rc}\nstdout: ${out}\nstderr: ${err}")
  endif()
  string(FIND "${out}${err}" "${expected_message}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "${name}: output lacks '${expected_message}':\n${out}${err}")
  endif()
endfunction()

expect_rc(quota_zero 2 "quota: 0 is outside (0, 1]" predict --model resnet50 --quota 0)
expect_rc(quota_big 2 "quota: 1.5 is outside (0, 1]" predict --model resnet50 --quota 1.5)
expect_rc(sm_big 2 "sm: 2 is outside (0, 1]" predict --model resnet50 --sm 2)
expect_rc(sm_negative 2 "sm: -0.5 is outside (0, 1]" predict --model resnet50 --sm=-0.5)
expect_rc(batch_zero 2 "batch: 0 is below 1" predict --model resnet50 --batch 0)

if(NOT EXISTS "${data}/rapp-hasgpu-v100-sm-quota-profiles/rapp_latency_sm_quota_batch.csv.xz")
  message(STATUS "RaPP table absent: data-dependent checks skipped")
  return()
endif()
expect_rc(unknown_model 2 "model: 'nosuchnet' is not in the RaPP table" predict --model nosuchnet)
expect_rc(low_quota 2 "quota 0.05 is outside the predictor's data: allowed 0.1..1"
          predict --model resnet50 --quota 0.05)
expect_rc(big_batch 2 "batch 16 is outside the predictor's data: allowed 1..8"
          predict --model resnet50 --batch 16)
expect_rc(small_sm 2 "sm 0.01 is outside the predictor's data: allowed 0.05..1"
          predict --model resnet50 --sm 0.01)
expect_rc(ok 0 "\"latency_ms\"" predict --model resnet50 --batch 4 --sm 0.5 --quota 0.3 --json)
expect_rc(folds_one 2 "folds: must be 0" predictor-eval --folds 1)
