# ctest driver: the real `sluice` binary with stdout and stderr piped, as in a script or CI log.
# `sim run --out` must print no progress line (stderr is not a terminal) and name the report;
# `sim plot` redraws it; `sim plot` on a missing directory exits 2 naming it. Invoked by
# src/sim/cli/CMakeLists.txt with -DSLUICE=<binary> -DSRC=<source dir> -DWORK=<scratch dir>.
set(dir "${WORK}/plot_binary_out")
file(REMOVE_RECURSE "${dir}")
execute_process(COMMAND "${SLUICE}" sim run "${SRC}/experiments/quickstart.yaml" --policy exclusive
                        --out "${dir}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sim run: exit code ${rc}\nstderr: ${err}")
endif()
if(NOT err STREQUAL "")
  message(FATAL_ERROR "sim run piped: expected nothing on stderr (no progress line), got:\n${err}")
endif()
string(FIND "${out}" "report: ${dir}/report.html" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "sim run: stdout does not name the report:\n${out}")
endif()
file(REMOVE "${dir}/report.html")
execute_process(COMMAND "${SLUICE}" sim plot "${dir}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS "${dir}/report.html" OR NOT EXISTS "${dir}/pareto.svg")
  message(FATAL_ERROR "sim plot: exit code ${rc}, report missing\nstderr: ${err}")
endif()
execute_process(COMMAND "${SLUICE}" sim plot "${WORK}/no-such-dir" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${err}" "${WORK}/no-such-dir: no such directory" pos)
if(NOT rc EQUAL 2 OR pos EQUAL -1)
  message(FATAL_ERROR "sim plot on a missing dir: exit code ${rc}, stderr: ${err}")
endif()
