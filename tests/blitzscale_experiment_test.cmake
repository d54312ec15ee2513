# ctest driver for the issue-10 "Done means" on the Azure LLM code trace: runs the real `sluice`
# binary on experiments/blitzscale-azure-code.yaml with serverless-llm and blitzscale only and
# checks, for every function, blitzscale's TTFT p99 <= 0.6x and TBT p99 <= 0.9x serverless-llm's,
# and blitzscale's GPU-seconds <= serverless-llm's; also the JSON contract keys. Invoked by
# tests/CMakeLists.txt with -DSLUICE=<binary> -DSRC=<source dir>. Prints "SKIP:" when the trace
# (../shared/data, read in place) is absent.
cmake_minimum_required(VERSION 3.25)  # string(JSON)
set(trace "${SRC}/../shared/data/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv")
if(NOT EXISTS "${trace}")
  message("SKIP: ${trace} is absent (the trace stays in ../shared/data)")
  return()
endif()

execute_process(COMMAND "${SLUICE}" sim run "${SRC}/experiments/blitzscale-azure-code.yaml" --json
                        --policy serverless-llm --policy blitzscale
                WORKING_DIRECTORY "${SRC}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "blitzscale-azure-code.yaml: exit code ${rc}\nstderr: ${err}")
endif()
string(JSON kind GET "${json}" kind)
string(JSON n_runs LENGTH "${json}" runs)
if(NOT kind STREQUAL "llm_serving" OR NOT n_runs EQUAL 2)
  message(FATAL_ERROR "want kind llm_serving and 2 runs, got ${kind} and ${n_runs}")
endif()

# The run index labelled `p` into `out`.
function(run_of p out)
  math(EXPR last "${n_runs} - 1")
  foreach(i RANGE ${last})
    string(JSON label GET "${json}" runs ${i} policy)
    if(label STREQUAL p)
      set(${out} ${i} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "no run labelled ${p}")
endfunction()
run_of(serverless-llm s)
run_of(blitzscale b)

# Fails unless b <= factor x s (numbers as JSON text; CMake has no floats, so compare in
# millionths via math(EXPR) on integers).
function(check what bv sv factor_millionths)
  foreach(v bv sv)
    if(NOT "${${v}}" MATCHES "^[0-9.eE+-]+$")
      message(FATAL_ERROR "${what}: not a number: '${${v}}'")
    endif()
  endforeach()
  # Scale to integers: values are ms or seconds well below 1e9; keep 3 decimals.
  foreach(v bv sv)
    string(REGEX MATCH "^([0-9]+)(\\.([0-9]*))?$" m "${${v}}")
    if(NOT m)
      message(FATAL_ERROR "${what}: unexpected number form '${${v}}'")
    endif()
    set(frac "${CMAKE_MATCH_3}000")
    string(SUBSTRING "${frac}" 0 3 frac)
    math(EXPR ${v}_milli "${CMAKE_MATCH_1} * 1000 + 1${frac} - 1000")
  endforeach()
  math(EXPR lhs "${bv_milli} * 1000000")
  math(EXPR rhs "${sv_milli} * ${factor_millionths}")
  if(lhs GREATER rhs)
    message(FATAL_ERROR "${what}: blitzscale ${bv} > ${factor_millionths}e-6 x serverless-llm ${sv}")
  endif()
  message(STATUS "${what}: blitzscale ${bv}, serverless-llm ${sv}")
endfunction()

string(JSON n_fns LENGTH "${json}" runs ${b} functions)
math(EXPR last_fn "${n_fns} - 1")
foreach(f RANGE ${last_fn})
  foreach(key ttft_p50_ms tbt_p50_ms slo_attainment scale_outs)
    string(JSON v ERROR_VARIABLE e GET "${json}" runs ${b} functions ${f} ${key})
    if(e)
      message(FATAL_ERROR "functions[${f}] has no ${key}: ${e}")
    endif()
  endforeach()
  string(JSON bt GET "${json}" runs ${b} functions ${f} ttft_p99_ms)
  string(JSON st GET "${json}" runs ${s} functions ${f} ttft_p99_ms)
  check("functions[${f}] TTFT p99 ms" "${bt}" "${st}" 600000)
  string(JSON bb GET "${json}" runs ${b} functions ${f} tbt_p99_ms)
  string(JSON sb GET "${json}" runs ${s} functions ${f} tbt_p99_ms)
  check("functions[${f}] TBT p99 ms" "${bb}" "${sb}" 900000)
endforeach()
string(JSON bg GET "${json}" runs ${b} gpu_seconds)
string(JSON sg GET "${json}" runs ${s} gpu_seconds)
check("GPU-seconds" "${bg}" "${sg}" 1000000)
