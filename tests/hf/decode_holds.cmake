# decode_holds.cmake - `memest generate CONFIG --context C --json`: the decode
# step's peak of live tensor bytes holds at least the model's weights and the
# KV cache at the end of the step (both live throughout it). A vision-language
# model's one-token graph has no vision tower; its weights are resident all
# the same (src/calc/generate.c, resident_missing).
#   cmake -DMEMEST=... -DSRC=<source dir> -DCONFIG=<file> -DCONTEXT=<tokens> -P decode_holds.cmake
include(${CMAKE_CURRENT_LIST_DIR}/memest_json.cmake)
memest_json(out generate ${CONFIG} --context ${CONTEXT})
string(JSON weights GET "${out}" generate weights)
string(JSON kv GET "${out}" generate decode kv_cache)
string(JSON peak GET "${out}" generate decode tensor_bytes)
math(EXPR need "${weights} + ${kv}")
if(peak LESS need)
  message(FATAL_ERROR "${CONFIG}: the decode peak ${peak} B is below the weights ${weights} B and the cache ${kv} B")
endif()
message(STATUS "${CONFIG}: decode peak ${peak} B >= weights ${weights} + cache ${kv}")
