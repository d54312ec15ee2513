# ctest driver for one shipped Dilu reproduction experiment: runs the real `sluice` binary on it
# with --json and checks the exit code, the JSON contract of docs/experiments.md (top-level keys,
# one run per policy x workload variant with the expected labels, every function's metric keys),
# and that the runs did work (arrivals for every inference function, a positive iteration rate
# for every training job, at least one active GPU). Invoked by tests/CMakeLists.txt with
#   -DSLUICE=<binary> -DSRC=<source dir> -DEXPERIMENT=<path under experiments/>
#   -DPOLICIES=a,b,... -DWORKLOADS=x,y,... [-DNEEDS_DATA=ON]
# Prints "SKIP:" (the test's SKIP_REGULAR_EXPRESSION) when NEEDS_DATA is on and Dilu's artifact
# workloads (../shared/data, no licence, never copied into the repo) are absent.

cmake_minimum_required(VERSION 3.25)  # IN_LIST, string(JSON)
set(bursty "${SRC}/../shared/data/dilu-artifacts/workloads/bursty.txt")
if(NEEDS_DATA AND NOT EXISTS "${bursty}")
  message("SKIP: ${bursty} is absent (Dilu artifact data stays in ../shared/data)")
  return()
endif()

execute_process(COMMAND "${SLUICE}" sim run "${SRC}/experiments/${EXPERIMENT}" --json
                WORKING_DIRECTORY "${SRC}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXPERIMENT}: exit code ${rc}\nstderr: ${err}")
endif()

# Fails the test unless `key` exists in the JSON object at the path given after it.
function(require_key what)
  string(JSON value ERROR_VARIABLE error GET "${json}" ${ARGN})
  if(error)
    message(FATAL_ERROR "${EXPERIMENT}: ${what}: ${error}")
  endif()
endfunction()

foreach(key experiment seed runs)
  require_key("top level" ${key})
endforeach()

string(REPLACE "," ";" policies "${POLICIES}")
string(REPLACE "," ";" workloads "${WORKLOADS}")
list(LENGTH policies n_policies)
list(LENGTH workloads n_workloads)
math(EXPR want_runs "${n_policies} * ${n_workloads}")
string(JSON n_runs LENGTH "${json}" runs)
if(NOT n_runs EQUAL want_runs)
  message(FATAL_ERROR
          "${EXPERIMENT}: ${n_runs} runs, want ${want_runs} (${POLICIES} x ${WORKLOADS})")
endif()

set(run_keys policy workload gpu_seconds peak_active_gpus mean_active_gpus sm_fragmentation
             mem_fragmentation functions)
set(fn_keys name requests p50_ms p95_ms p99_ms mean_ms svr cold_starts throughput_rps completed
            dropped)
set(seen "")
math(EXPR last_run "${n_runs} - 1")
foreach(i RANGE ${last_run})
  foreach(key ${run_keys})
    require_key("runs[${i}]" runs ${i} ${key})
  endforeach()
  string(JSON policy GET "${json}" runs ${i} policy)
  string(JSON workload GET "${json}" runs ${i} workload)
  list(APPEND seen "${policy}/${workload}")
  string(JSON gpus GET "${json}" runs ${i} peak_active_gpus)
  if(gpus LESS 1)
    message(FATAL_ERROR "${EXPERIMENT}: ${policy}/${workload}: peak_active_gpus ${gpus}")
  endif()
  string(JSON n_fns LENGTH "${json}" runs ${i} functions)
  math(EXPR last_fn "${n_fns} - 1")
  foreach(j RANGE ${last_fn})
    foreach(key ${fn_keys})
      require_key("runs[${i}].functions[${j}]" runs ${i} functions ${j} ${key})
    endforeach()
    string(JSON name GET "${json}" runs ${i} functions ${j} name)
    string(JSON rate ERROR_VARIABLE no_training GET "${json}" runs ${i} functions ${j}
           training_iters_per_s)
    if(no_training)
      string(JSON requests GET "${json}" runs ${i} functions ${j} requests)
      if(requests LESS_EQUAL 0)
        message(FATAL_ERROR "${EXPERIMENT}: ${policy}/${workload}: ${name} got no requests")
      endif()
    else()
      require_key("runs[${i}].functions[${j}] (training)" runs ${i} functions ${j} jct_s)
      if(NOT rate GREATER 0)
        message(FATAL_ERROR "${EXPERIMENT}: ${policy}/${workload}: ${name} trained at ${rate}/s")
      endif()
    endif()
  endforeach()
endforeach()

foreach(policy ${policies})
  foreach(workload ${workloads})
    if(NOT "${policy}/${workload}" IN_LIST seen)
      message(FATAL_ERROR "${EXPERIMENT}: no run ${policy}/${workload}; runs: ${seen}")
    endif()
  endforeach()
endforeach()
message(STATUS "${EXPERIMENT}: ${n_runs} runs OK")
