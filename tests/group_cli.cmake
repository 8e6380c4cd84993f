# Command-line and bad-input cases: tests/errors/cases.tsv, one per line:
#   NAME <TAB> EXIT <TAB> STDERR FRAGMENT <TAB> ARGUMENTS
# In ARGUMENTS, @ stands for tests/errors/NAME.json, GOOD for the valid
# tests/errors/good.json, @models/ for the shipped models directory and @hf/
# for tests/hf/, @errors/ for tests/errors/ (other files of a case); arguments are separated by spaces, and an argument
# env:NAME=VALUE sets an environment variable of the run instead (run_case's
# ENV; VALUE may hold @hf/).
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/errors/cases.tsv _cases ENCODING UTF-8)
foreach(line IN LISTS _cases)
  if(line MATCHES "^#" OR line STREQUAL "")
    continue()
  endif()
  string(REPLACE "\t" ";" f "${line}")
  list(LENGTH f nf)
  if(NOT nf EQUAL 4)
    message(FATAL_ERROR "tests/errors/cases.tsv: bad line: ${line}")
  endif()
  list(GET f 0 name)
  list(GET f 1 code)
  list(GET f 2 frag)
  list(GET f 3 args)
  string(REPLACE "@models/" "${PROJECT_SOURCE_DIR}/models/" args "${args}")
  string(REPLACE "@hf/" "${CMAKE_CURRENT_SOURCE_DIR}/hf/" args "${args}")
  string(REPLACE "@errors/" "${CMAKE_CURRENT_SOURCE_DIR}/errors/" args "${args}")
  string(REPLACE "@" "${CMAKE_CURRENT_SOURCE_DIR}/errors/${name}.json" args "${args}")
  string(REPLACE "GOOD" "${CMAKE_CURRENT_SOURCE_DIR}/errors/good.json" args "${args}")
  string(REPLACE " " ";" args "${args}")
  set(env "")
  foreach(a IN LISTS args)
    if(a MATCHES "^env:(.*)$")
      list(APPEND env "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  list(FILTER args EXCLUDE REGEX "^env:")
  string(REPLACE ";" "|" env "${env}")
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=${args}" "-DENV=${env}"
                   -DEXIT=${code} "-DFRAGMENT=${frag}" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(cli.${name} PROPERTIES LABELS cli)
endforeach()

# Each subcommand prints what its flag form prints (tests/same_output.cmake):
# NAME | the subcommand's arguments | the flag form's (@ the models folder).
set(_forms
    "estimate|estimate @/resnet50.json --batch 4|@/resnet50.json --batch 4"
    "fit|fit @/resnet50.json --gpu a100-40gb|@/resnet50.json --gpu a100-40gb --fit"
    "fit_nofit|fit @/vgg16.json --batch 256 --gpu t4|@/vgg16.json --batch 256 --gpu t4 --fit"
    "sweep|sweep @/bert-base.json 1,2,4 --csv|@/bert-base.json --sweep 1,2,4 --csv"
    "max_batch|max-batch @/resnet50.json --gpu t4|@/resnet50.json --max-batch --gpu t4"
    "compare|compare @/resnet18.json --batch 8|@/resnet18.json --gpu all --batch 8"
    "advise|advise @/resnet50.json --batch 64 --gpu t4|@/resnet50.json --batch 64 --advise --gpu t4"
    "generate|generate @/hf/llama-3-8b.json --context 512 --gpu a100-80gb|@/hf/llama-3-8b.json --generate --context 512 --gpu a100-80gb")
foreach(f IN LISTS _forms)
  string(REPLACE "@" "${PROJECT_SOURCE_DIR}/models" f "${f}")
  string(REPLACE " " ";" f "${f}")
  string(REPLACE "|" ";|;" f "${f}")
  list(GET f 0 name)
  list(SUBLIST f 2 -1 rest)
  list(FIND rest "|" bar)
  list(SUBLIST rest 0 ${bar} a)
  math(EXPR from "${bar} + 1")
  list(SUBLIST rest ${from} -1 b)
  add_test(NAME cli.subcommand_${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DA=${a}" "-DB=${b}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/same_output.cmake)
  set_tests_properties(cli.subcommand_${name} PROPERTIES LABELS cli)
endforeach()

# "discarded": true silences the unused-node warning (tests/errors/
# unused_node is the warning itself): a side branch marked so, and the
# vision-language templates, whose modeling code computes and drops CLIP's
# pooler output and the image-token shape check
foreach(q "discarded;${CMAKE_CURRENT_SOURCE_DIR}/errors/discarded_ok.json|--batch|2"
          "llava;${PROJECT_SOURCE_DIR}/models/hf/llava-1.5-7b-hf.json|--batch|1"
          "llama4_vl;${CMAKE_CURRENT_SOURCE_DIR}/hf/published/llama-4-scout-17b-16e-vl.json|--batch|1|--inference")
  list(GET q 0 name)
  list(GET q 1 args)
  string(REPLACE "|" ";" args "${args}")
  add_test(NAME cli.quiet_${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=${args}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/quiet.cmake)
  set_tests_properties(cli.quiet_${name} PROPERTIES LABELS cli)
endforeach()
