# policy.cmake - what memest accepts of a real config.json (tests/hf/policy/,
# doc/model-format.md "Hugging Face configs"):
#  - keys that change no memory (tool-written, LLaMA-1's max_sequence_length,
#    Phi-4-mini's full_attn_mod, ..., Infinity and NaN in such keys) are
#    accepted without a word, and the parameters are the hand counts below;
#  - an unknown key is one warning, once, whatever the flow estimates after
#    (a sweep, a comparison of cards, the largest batch), and the estimate
#    goes on; past 8 unknown keys, one line counts the rest.
# The refusals (--strict-config, auto_map without a template, Infinity or NaN
# where the model is built with it) are cases of tests/errors/cases.tsv.
#   cmake -DMEMEST=... -DSRC=<source dir> -P policy.cmake
set(ENV{MEMEST_ARCH_PATH} "${SRC}/tests/hf/arch")
set(dir ${SRC}/tests/hf/policy)
set(fail "")

# memest FILE ARGS...: exit 0 and `lines` lines of stderr, each a
# "memest: warning: " line; out gets stdout.
function(run_ok file lines)
  execute_process(COMMAND ${MEMEST} ${dir}/${file} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  string(REGEX MATCHALL "\n" all "${e}")
  string(REGEX MATCHALL "memest: warning: " warned "${e}")
  list(LENGTH all nall)
  list(LENGTH warned nwarned)
  if(NOT rc EQUAL 0 OR NOT nall EQUAL ${lines} OR NOT nwarned EQUAL ${lines})
    set(fail "${fail}memest ${file} ${ARGN}: exit ${rc}, ${nall} lines of stderr (want 0 and ${lines} warnings):\n${e}\n" PARENT_SCOPE)
  endif()
  set(out "${o}" PARENT_SCOPE)
  set(err "${e}" PARENT_SCOPE)
endfunction()

# Hand counts of transformers v4.48.0's modules (vocab 1000, hidden 64,
# intermediate 256, 2 layers, 8 heads of 8):
#  llama1 (LlamaForCausalLM, untied, 8 kv heads): embed 64000 + 2 x (q,k,v,o
#    4*64*64 + gate,up,down 3*64*256 + 2 norms 128 = 65664) + norm 64 +
#    lm_head 64000 = 259392;
#  phi4_mini (Phi3ForCausalLM, tied, 2 kv heads): embed 64000 + 2 x (qkv_proj
#    64*(64+2*16) + o_proj 64*64 + gate_up_proj 64*512 + down_proj 256*64 +
#    2 norms 128 = 59520) + norm 64 = 183104;
#  tools_keys: llama1's model under other keys; infinity_free (0): no count.
foreach(case "llama1.json=259392" "phi4_mini.json=183104" "tools_keys.json=259392"
             "infinity_free.json=0")
  string(REPLACE "=" ";" case "${case}")
  list(GET case 0 file)
  list(GET case 1 want)
  run_ok(${file} 0 --json)
  if(want AND NOT fail)
    string(JSON got GET "${out}" params total)
    if(NOT got EQUAL want)
      set(fail "${fail}${file}: params.total ${got}, the hand count is ${want}\n")
    endif()
  endif()
endforeach()

# one unknown key: one warning in every flow
foreach(flow "--batch 2" "--sweep 1,2,4" "--gpu all --batch 2" "--max-batch --gpu t4"
             "--sweep-var seq_len=8,16" "--advise --gpu t4" "--generate --context 16"
             "--gpus 2 --pp 2")
  string(REPLACE " " ";" args "${flow}")
  run_ok(llama_unknown.json 1 ${args})
  if(NOT err MATCHES "llama_unknown.json: use_fused_kernel: unknown key for model_type \"llama\"")
    set(fail "${fail}${flow}: the warning does not name the file, the key and the model_type:\n${err}\n")
  endif()
endforeach()
# nested in a known object, the same
run_ok(../errors/rope_unknown_field.json 1 --sweep 1,2)
if(NOT err MATCHES "rope_scaling.beta_fast: unknown key for model_type")
  set(fail "${fail}rope_unknown_field.json: ${err}\n")
endif()
# the attention implementation: the option memest takes it from
run_ok(attn_implementation.json 1)
if(NOT err MATCHES "attn_implementation: .*--attention")
  set(fail "${fail}attn_implementation.json: ${err}\n")
endif()
# 18 unknown keys: 8 warnings and one line for the other 10
run_ok(many_unknown.json 9)
if(NOT err MATCHES "extra_07: unknown key" OR err MATCHES "extra_08" OR
   NOT err MATCHES "many_unknown.json: 10 more unknown keys")
  set(fail "${fail}many_unknown.json: ${err}\n")
endif()

if(fail)
  message(FATAL_ERROR "${fail}")
endif()
