# optim_bnb.cmake - bitsandbytes' optimizer state of Llama-2-7B
# (models/hf/llama-2-7b.json, bf16), written out by hand from
# bitsandbytes/optim/optimizer.py (0.50.2.dev0: Optimizer2State.init_state,
# get_state_buffer; blocksize 256, min_8bit_size 4096, paged from 1e5
# elements) against `memest --json`:
#   tensors: embed_tokens and lm_head 32000 x 4096 = 131,072,000 elements;
#     per layer (32) q/k/v/o_proj 4096 x 4096 = 16,777,216, gate/up/down_proj
#     11008 x 4096 = 45,088,768, two RMSNorm weights of 4096; the final norm
#     4096: 6,738,415,616 elements, of which 65 norms x 4096 = 266,240 in
#     tensors under 1e5 elements (not paged) and none under 4096 (all 8-bit);
#   absmax blocks (256 elements): 2 x 512,000 + 32 x (4 x 65,536 + 3 x
#     176,128 + 2 x 16) + 16 = 26,321,936;
#   adamw8bit: 2 x 6,738,415,616 (uint8 state1, state2) + 2 x 4 x 26,321,936
#     (absmax1, absmax2) + 2 x 1,024 (qmap1, qmap2) = 13,687,408,768 bytes;
#   paged_adamw8bit: paged 2 x (6,738,415,616 - 266,240) = 13,476,298,752;
#     on the device 210,575,488 + 2 x 266,240 + 2,048 = 211,110,016;
#   paged_adamw32bit: paged 8 x 6,738,149,376 = 53,905,195,008; on the device
#     the norms' float32 states, 8 x 266,240 = 2,129,920.
#   cmake -DMEMEST=... -DSRC=<source dir> -P optim_bnb.cmake
set(cases "adamw8bit 13687408768 -" "paged_adamw8bit 211110016 13476298752"
          "paged_adamw32bit 2129920 53905195008")
foreach(c ${cases})
  string(REPLACE " " ";" c "${c}")
  list(GET c 0 optim)
  list(GET c 1 want_dev)
  list(GET c 2 want_paged)
  execute_process(COMMAND ${MEMEST} models/hf/llama-2-7b.json --dtype bf16 --optim ${optim} --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "memest --optim ${optim}: exit ${rc}: ${err}")
  endif()
  string(JSON dev GET "${out}" memory optimizer_state)
  string(JSON host GET "${out}" memory optimizer_state_host)
  string(JSON paged ERROR_VARIABLE no_paged GET "${out}" memory optimizer_state_paged)
  if(NOT dev EQUAL want_dev OR NOT host EQUAL 0)
    message(FATAL_ERROR "${optim}: optimizer_state ${dev} (host ${host}), expected ${want_dev} (host 0)")
  endif()
  if(want_paged STREQUAL "-")
    if(NOT no_paged)
      message(FATAL_ERROR "${optim}: optimizer_state_paged ${paged}, expected no such key")
    endif()
  elseif(no_paged OR NOT paged EQUAL want_paged)
    message(FATAL_ERROR "${optim}: optimizer_state_paged ${paged}, expected ${want_paged}")
  endif()
endforeach()
