# ctest driver for scripts/reproduce-dilu: runs it on the built `sluice` binary and checks that it
# exits 0 and prints every experiment's table with the paper's numbers beside ours. Invoked by
# tests/CMakeLists.txt with -DPYTHON=<python3> -DSLUICE=<binary> -DSRC=<source dir>. Prints
# "SKIP:" when Dilu's artifact workloads (../shared/data, no licence) are absent.
set(bursty "${SRC}/../shared/data/dilu-artifacts/workloads/bursty.txt")
if(NOT EXISTS "${bursty}")
  message("SKIP: ${bursty} is absent (Dilu artifact data stays in ../shared/data)")
  return()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env "SLUICE=${SLUICE}"
                        "${PYTHON}" "${SRC}/scripts/reproduce-dilu"
                WORKING_DIRECTORY "${SRC}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "reproduce-dilu: exit code ${rc}\nstderr: ${err}")
endif()
foreach(expected "### table3:" "### table3-batch1:" "### collocation, training-inference:"
                 "### collocation, inference-inference:" "### collocation, training-training:"
                 "### cv-sweep:" "### ablation" "| bursty | dilu | 7 |" "Paper (§5.4):"
                 "aggregate-inference dilu/exclusive=")
  string(FIND "${out}" "${expected}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "reproduce-dilu: output lacks '${expected}':\n${out}")
  endif()
endforeach()
