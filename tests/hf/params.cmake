# params.cmake - `memest --json CONFIG` on a shipped Hugging Face config
# (models/hf/NAME.json) reports the parameter count and buffers that
# PyTorch gives the same model (tests/tools/hf_figures.py: transformers
# v4.48.0's modules built on the meta device) and, where there is one, the
# published count (both in tests/reference/hf_figures*.json "configs"; the
# generators assert that they agree).
#   cmake -DMEMEST=... -DSRC=<source dir> -DNAME=<config> -P params.cmake
execute_process(COMMAND ${MEMEST} models/hf/${NAME}.json --json WORKING_DIRECTORY ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "memest models/hf/${NAME}.json --json: exit ${rc}: ${err}")
endif()
# the figures file that has this config (hf_figures.json, hf_figures_moe.json, ...: one per generator)
file(GLOB figures ${SRC}/tests/reference/hf_figures*.json)
# (configs.NAME {params_total, buffers_count, published_params}, or
# hf_figures_b.json's params."NAME.json" {params, buffers, published})
set(want "")
foreach(f ${figures})
  file(READ ${f} text)
  string(JSON entry ERROR_VARIABLE missing GET "${text}" configs ${NAME})
  if(NOT missing)
    string(JSON want GET "${text}" configs ${NAME} params_total)
    string(JSON want_buf GET "${text}" configs ${NAME} buffers_count)
    string(JSON published ERROR_VARIABLE no_pub GET "${text}" configs ${NAME} published_params)
    break()
  endif()
  string(JSON entry ERROR_VARIABLE missing GET "${text}" params ${NAME}.json)
  if(NOT missing)
    string(JSON want GET "${text}" params ${NAME}.json params)
    string(JSON want_buf GET "${text}" params ${NAME}.json buffers)
    string(JSON published ERROR_VARIABLE no_pub GET "${text}" params ${NAME}.json published)
    break()
  endif()
endforeach()
if(want STREQUAL "")
  message(FATAL_ERROR "${NAME}: no tests/reference/hf_figures*.json has its figures (run its generator)")
endif()
string(JSON got GET "${out}" params total)
string(JSON got_buf GET "${out}" params buffers)
if(NOT got EQUAL want)
  message(FATAL_ERROR "${NAME}: memest counts ${got} parameters, PyTorch (meta) ${want}")
endif()
if(NOT no_pub AND NOT got EQUAL published)
  message(FATAL_ERROR "${NAME}: memest counts ${got} parameters, published ${published}")
endif()
if(NOT got_buf EQUAL want_buf)
  message(FATAL_ERROR "${NAME}: memest counts ${got_buf} buffer elements, PyTorch ${want_buf}")
endif()
message(STATUS "${NAME}: ${got} parameters (PyTorch ${want}, published ${published}), ${got_buf} buffer elements")
