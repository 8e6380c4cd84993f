# Robustness tests beyond tests/errors/cases.tsv (issue 6):
#   limits.*    files generated at test time: over the size limit, over the
#               JSON value limit, and a valid model behind 64 MiB of white
#               space (bounded time and memory); files over the node and work
#               limits; and for each limit of models/README.md#limits and
#               doc/robustness.md (cost), a file at it (accepted) and one just over it
#               (refused quickly, with the limit's message), tests/limits/
#               (those that take seconds: label "slow"; tests/perf/limits.sh
#               measures their time and memory);
#   json.*      the --json error document on stdout for each error class;
#   valgrind.*  memest under valgrind on every shipped model and on every bad
#               input (no leak, no invalid access): with -DMEMEST_VALGRIND_TESTS=ON
#               in a build without sanitizers (label "valgrind"; .ci/run does).
set(_err ${CMAKE_CURRENT_SOURCE_DIR}/errors)
set(_gen ${CMAKE_CURRENT_BINARY_DIR}/generated)
file(MAKE_DIRECTORY ${_gen})

foreach(kind_exit_frag IN ITEMS "sparse|3|limited to 256 MiB" "values|3|more than 2000000 JSON values"
                                "values_at|0|" "whitespace|0|")
  string(REPLACE "|" ";" f "${kind_exit_frag}")
  list(GET f 0 kind)
  list(GET f 1 code)
  list(GET f 2 frag)
  add_test(NAME limits.${kind}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DKIND=${kind}
                   -DOUT=${_gen}/${kind}.json -DEXIT=${code} "-DFRAGMENT=${frag}"
                   -P ${_err}/generated_case.cmake)
  set_tests_properties(limits.${kind} PROPERTIES LABELS cli TIMEOUT 120)
endforeach()
# A character device: read up to the limit, then refused.
add_test(NAME limits.device
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DARGS=/dev/zero -DEXIT=3
                 "-DFRAGMENT=larger than the 256 MiB limit" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
set_tests_properties(limits.device PROPERTIES LABELS cli TIMEOUT 120)

# The files that expand up to the node limit and the expansion work limit:
# about a second natively, longer under the sanitizers (label "slow").
foreach(case IN ITEMS "repeat_limit|more than 250000 nodes"
                      "work_limit|expanding the model takes more than 500000 steps"
                      "long_expression|expanding the model takes more than 500000 steps")
  string(REPLACE "|" ";" f "${case}")
  list(GET f 0 name)
  list(GET f 1 frag)
  add_test(NAME limits.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DARGS=${_err}/${name}.json
                   -DEXIT=3 "-DFRAGMENT=${frag}" -DTIMEOUT=600
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(limits.${name} PROPERTIES LABELS "cli;slow" TIMEOUT 700)
endforeach()

# At each limit and just over it (issue 10). NAME|EXIT|STDERR FRAGMENT|ARGS,
# with @ for tests/limits/ and @models/ for the shipped models. The figures
# come from the files' construction: 250,000 nodes; 500,000 expansion steps
# (4 per call of the block); a linear layer and n ReLUs cost 22 n + 110 units
# (by hand in tests/unit/test_cost.c): 227,267 of them 4,999,984, 227,268
# 5,000,006, 1,000 of them 22,110, so that 40,000,000 units pay for 1,809
# batch sizes; --sweep-var n=10000:K:+10000 of that chain costs per value
# (graph built twice at 8 units per step, n + 2 steps; shape inference
# 10 n + 26; estimate 22 n + 110) 48 n + 168: 37,442,016 up to 120,000,
# 43,682,184 up to 130,000.
set(_lim ${CMAKE_CURRENT_SOURCE_DIR}/limits)
foreach(case IN ITEMS
    "nodes_at|0||@nodes_at.json"
    "nodes_over|3|more than 250000 nodes|@nodes_over.json"
    "repeat_over|3|must be an integer between 1 and 250000|@linear_2m.json"
    "work_at|0||@work_at.json"
    "work_over|3|expanding the model takes more than 500000 steps|@work_over.json"
    "cost_at|0||@cost_at.json"
    "cost_over|3|one estimate costs 5,000,006 units|@cost_over.json"
    "records_over|3|shape inference made records costing|@lstm_20000.json"
    "sweep_at|0||@chain_1000.json;--sweep;1:1809:+1"
    "sweep_over|2|this model allows at most 1809 batch sizes|@chain_1000.json;--sweep;1:1810:+1"
    "sweep_var_at|0||@chain_n.json;--sweep-var;n=10000:120000:+10000"
    "sweep_var_over|2|up to n=130000 (13 of 13) need 43,682,184 cost units|@chain_n.json;--sweep-var;n=10000:130000:+10000"
    "sweep_var_gpt2|2|more than memest does for one command (40,000,000 units|@models/gpt2.json;--sweep-var;n_layer=1:65536:+1"
    "sweep_largest|2|this model allows at most 8 batch sizes|@cost_at.json;--sweep;1:65536:+1"
    "max_batch_over|2|--max-batch: the command needs more work than memest does|@cost_at.json;--mem;1TiB;--max-batch"
    "max_batch_scan|0|what this command's work budget allows|@models/mobilenet_v2.json;--mem;1TiB;--inference;--max-batch"
    "advise_largest|2|--advise: the command needs more work than memest does|@cost_at.json;--mem;1KiB;--batch;2;--advise")
  string(REPLACE "|" ";" f "${case}")
  list(GET f 0 name)
  list(GET f 1 code)
  list(GET f 2 frag)
  list(SUBLIST f 3 -1 args)
  string(REPLACE "@models/" "${PROJECT_SOURCE_DIR}/models/" args "${args}")
  string(REPLACE "@" "${_lim}/" args "${args}")
  add_test(NAME limits.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=${args}" -DEXIT=${code}
                   "-DFRAGMENT=${frag}" -DTIMEOUT=600
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(limits.${name} PROPERTIES LABELS "cli;slow" TIMEOUT 700)
endforeach()

# Batch sizes past memest's limits are rows that say so, costing what their
# refusal did (not counted as the most an estimate may cost).
add_test(NAME limits.sweep_rows_beyond
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest>
                 "-DARGS=${PROJECT_SOURCE_DIR}/models/gpt2.json;--sweep;1:9007199254740991:x2"
                 -DEXIT=0 "-DSTDOUT=beyond memest's limits" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
set_tests_properties(limits.sweep_rows_beyond PROPERTIES LABELS cli)

# --json: the error document on stdout (and the one line on stderr).
foreach(case IN ITEMS "truncated|\"code\": \"parse\"" "dup_node|\"code\": \"schema\""
                      "shape_mismatch|\"code\": \"shape\"" "overflow_bytes|\"code\": \"limit\""
                      "bad_token|\"line\": 3" "in_features_mismatch|\"node\": \"fc\""
                      "unknown_arg|\"path\": \"layers[0].out_feature\"")
  string(REPLACE "|" ";" f "${case}")
  list(GET f 0 name)
  list(GET f 1 frag)
  add_test(NAME json.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=${_err}/${name}.json;--json"
                   -DEXIT=3 "-DSTDOUT=${frag}" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(json.${name} PROPERTIES LABELS cli)
endforeach()
add_test(NAME json.missing_file
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=/nonexistent.json;--json"
                 -DEXIT=3 "-DSTDOUT=\"code\": \"io\"" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
set_tests_properties(json.missing_file PROPERTIES LABELS cli)

option(MEMEST_VALGRIND_TESTS "Add the valgrind tests (label valgrind; minutes)" OFF)
if(MEMEST_VALGRIND_TESTS)
  find_program(MEMEST_VALGRIND valgrind REQUIRED)
endif()
if(MEMEST_VALGRIND_TESTS AND NOT MEMEST_SANITIZE)
  set(_vg ${MEMEST_VALGRIND} --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect
          --error-exitcode=99)
  file(GLOB _models CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/*.json)
  foreach(model IN LISTS _models)
    get_filename_component(name ${model} NAME_WE)
    if(name STREQUAL "gpus")   # the GPU presets, not a model
      continue()
    endif()
    add_test(NAME valgrind.${name}
             COMMAND ${_vg} $<TARGET_FILE:memest> ${model} --batch 2 --layers)
    set_tests_properties(valgrind.${name} PROPERTIES LABELS valgrind TIMEOUT 600)
  endforeach()
  # Fine-tuning and serving (doc/fine-tuning.md): QLoRA, GPTQ with LoRA, int8 inference,
  # and generation with vLLM's blocks and the context search, on tiny configs.
  set(_tiny ${PROJECT_SOURCE_DIR}/tests/hf/tiny)
  set(_ft_cases
      "qlora|llama.json|--weights nf4 --double-quant --compute-dtype bf16 --kbit-prep --lora 4 --lora-dropout 0.05 --lora-targets all-linear --optim paged_adamw8bit --checkpoint --dtype bf16 --layers"
      "gptq_lora|mistral.json|--weights int4 --group-size -1 --lora 4 --optim adamw8bit --first-step --layers"
      "int8_inference|qwen2.json|--weights int8 --inference --layers"
      "generate|mixtral.json|--generate --context 64 --new-tokens 8 --kv-block 16 --gpu a100-80gb"
      "generate_max_context|llama.json|--generate --cache static --max-context --mem 1GiB"
      # several GPUs (doc/several-gpus.md): sharded states with gathered
      # units and offload, pipeline stages with tensor parallelism, a
      # DeepSpeed config
      "dist_fsdp|llama.json|--gpus 8 --strategy fsdp --checkpoint --dtype bf16 --layers"
      "dist_zero3_offload|mistral.json|--gpus 4 --strategy zero3 --offload optimizer+params --first-step"
      "dist_pipeline|llama.json|--gpus 8 --tp 2 --pp 2 --strategy zero1 --micro-batches 4 --max-batch --mem 4GiB"
      "dist_deepspeed|qwen2.json|--gpus 8 --deepspeed ${PROJECT_SOURCE_DIR}/tests/dist/ds_zero2_bf16.json"
      "dist_accelerate|llama.json|--fsdp-config ${PROJECT_SOURCE_DIR}/tests/dist/accelerate_fsdp.yaml"
      # the comparison of cards (doc/cards-and-fit.md, "Choosing a card")
      "compare|llama.json|--gpu t4,h100,mi300x --batch 4 --set seq_len=4096 --lora 4 --gpus 16 --price t4=0.3 --json")
  foreach(c IN LISTS _ft_cases)
    string(REPLACE "|" ";" parts "${c}")   # name;model;arguments (no ';' inside)
    list(GET parts 0 name)
    list(GET parts 1 model)
    list(GET parts 2 argstr)
    separate_arguments(args UNIX_COMMAND "${argstr}")
    add_test(NAME valgrind.ft.${name} COMMAND ${_vg} $<TARGET_FILE:memest> ${_tiny}/${model} ${args})
    set_tests_properties(valgrind.ft.${name} PROPERTIES LABELS valgrind TIMEOUT 600)
  endforeach()
  # Every bad input: exit 3 (or 2), never 99 (a valgrind error); 4 shards.
  foreach(shard RANGE 0 3)
    add_test(NAME valgrind.errors.${shard}
             COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DVALGRIND=${MEMEST_VALGRIND}
                     -DDIR=${_err} -DSHARD=${shard} -DSHARDS=4 -P ${_err}/valgrind_all.cmake)
    set_tests_properties(valgrind.errors.${shard} PROPERTIES LABELS valgrind TIMEOUT 900)
  endforeach()
endif()
