# ctest driver for HAS-GPU's standard experiment: runs the real `sluice` binary on
# experiments/hasgpu-standard.yaml with kserve, fast-gshare and has-gpu only, checks the cost keys
# of the JSON contract and the ordering the issue's targets state: has-gpu's cost per 1K requests
# is below fast-gshare's and kserve's for the run, and below kserve's for every function. Invoked by
# tests/CMakeLists.txt with -DSLUICE=<binary> -DSRC=<source dir>. Prints "SKIP:" when the RaPP
# table or Dilu's series (../shared/data, no licence, never copied into the repo) are absent.
cmake_minimum_required(VERSION 3.25)  # string(JSON)
set(data "${SRC}/../shared/data")
foreach(f rapp-hasgpu-v100-sm-quota-profiles/rapp_latency_sm_quota_batch.csv.xz
          dilu-artifacts/workloads/bursty.txt)
  if(NOT EXISTS "${data}/${f}")
    message("SKIP: ${data}/${f} is absent (the data stays in ../shared/data)")
    return()
  endif()
endforeach()

execute_process(COMMAND "${SLUICE}" sim run "${SRC}/experiments/hasgpu-standard.yaml" --json
                        --policy kserve --policy fast-gshare --policy has-gpu
                WORKING_DIRECTORY "${SRC}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "hasgpu-standard.yaml: exit code ${rc}\nstderr: ${err}")
endif()

string(JSON n_runs LENGTH "${json}" runs)
if(NOT n_runs EQUAL 3)
  message(FATAL_ERROR "hasgpu-standard.yaml: ${n_runs} runs, want 3")
endif()
# cost per 1K of policy `p` for the run (fn = -1) or function index fn, into `out`.
function(cost_of p fn out)
  math(EXPR last "${n_runs} - 1")
  foreach(i RANGE ${last})
    string(JSON label GET "${json}" runs ${i} policy)
    if(label STREQUAL p)
      if(fn EQUAL -1)
        string(JSON v GET "${json}" runs ${i} cost_per_1k_requests_usd)
      else()
        string(JSON v GET "${json}" runs ${i} functions ${fn} cost_per_1k_requests_usd)
        string(JSON slo ERROR_VARIABLE e GET "${json}" runs ${i} functions ${fn} slo_sweep svr)
        if(e)
          message(FATAL_ERROR "${p}: function ${fn} has no slo_sweep.svr: ${e}")
        endif()
      endif()
      set(${out} "${v}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "no run labelled ${p}")
endfunction()

string(JSON n_fns LENGTH "${json}" runs 0 functions)
foreach(i RANGE ${n_fns})  # i == n_fns: the whole run
  set(fn ${i})
  if(i EQUAL n_fns)
    set(fn -1)
  endif()
  cost_of(has-gpu ${fn} has)
  if(NOT has GREATER 0)
    message(FATAL_ERROR "function ${fn}: has-gpu cost per 1K is ${has}, want > 0")
  endif()
  # Per function only against kserve: convnext_large's has-gpu pods cost more than FaST-GShare's
  # fixed (0.3, 0.5) pod (docs/REPRODUCTION.md, "Reproducing HAS-GPU"); the run must still win.
  set(bases kserve)
  if(fn EQUAL -1)
    set(bases kserve fast-gshare)
  endif()
  foreach(base ${bases})
    cost_of(${base} ${fn} b)
    if(NOT has LESS b)
      message(FATAL_ERROR "function ${fn} (-1 = run): has-gpu costs ${has} per 1K requests, "
                          "not less than ${base}'s ${b}")
    endif()
  endforeach()
  message(STATUS "function ${fn} (-1 = run): has-gpu ${has} US$ per 1K requests")
endforeach()
