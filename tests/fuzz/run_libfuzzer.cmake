# Runs one libFuzzer target for a bounded time on a fresh copy of its seeds
# (ctest's fuzz.<name> tests; see docs/fuzzing.md). Fails on any crash,
# sanitizer report, leak, timeout or out-of-memory; the reproducer is
# written to ARTIFACTS.
#
#   cmake -DFUZZER=<binary> -DNAME=<name> -DSEEDS=<path|path|...> -DWORK=<dir>
#         -DSECONDS=<n> [-DSEED=<n>] [-DEXTRA=<arg|arg|...>] -P run_libfuzzer.cmake
#
# SEEDS are files and directories (copied, never written); WORK is a
# directory in the build tree that is emptied first.
foreach(var FUZZER NAME SEEDS WORK SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_libfuzzer.cmake: ${var} is not set")
  endif()
endforeach()

set(corpus ${WORK}/corpus)
set(artifacts ${WORK}/artifacts)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${corpus} ${artifacts})

string(REPLACE "|" ";" seeds "${SEEDS}")
set(count 0)
foreach(seed IN LISTS seeds)
  if(IS_DIRECTORY ${seed})
    file(GLOB_RECURSE files LIST_DIRECTORIES false ${seed}/*)
  elseif(EXISTS ${seed})
    set(files ${seed})
  else()
    message(FATAL_ERROR "seed ${seed} does not exist")
  endif()
  foreach(f IN LISTS files)
    # Flat names: seeds from different directories may share a file name.
    math(EXPR count "${count} + 1")
    get_filename_component(base ${f} NAME)
    file(COPY_FILE ${f} ${corpus}/seed${count}_${base})
  endforeach()
endforeach()
if(NOT DEFINED SEED)
  set(SEED 0)
endif()
message(STATUS "${NAME}: ${count} seed files, ${SECONDS} s, -seed=${SEED}")

string(REPLACE "|" ";" extra "${EXTRA}")
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -seed=${SEED} -rss_limit_mb=2048 -timeout=25
          -print_final_stats=1 -artifact_prefix=${artifacts}/ ${extra} ${corpus}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found ${artifacts}/*)
  message(FATAL_ERROR "${NAME}: libFuzzer exited with ${rc}; reproducer: ${found}")
endif()
