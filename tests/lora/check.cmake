# --lora against independent figures (tests/group_lora.cmake):
#   cmake -DMEMEST=path -DSRC=dir -DCHECK=count -DARGS="model;options" -DTRAINABLE=N -DALL=N -DLINE=text -P check.cmake
#     the counts of --json's "lora" object and its print_trainable_parameters line (PEFT's
#     print_trainable_parameters(), peft v0.17.1 peft_model.py) equal the hand-computed ones;
#     the text report prints the same line.
#   cmake -DMEMEST=path -DSRC=dir -DCHECK=saved -DCASE=key -P check.cmake
#     the bytes saved for backward with --lora equal those of the plain-PyTorch replica of
#     PEFT's lora.Linear (tests/tools/lora_figures.py, tests/reference/lora_figures.json)
#     exactly, and so do the parameter counts. Under --checkpoint, memest's saved
#     activations at the end of the forward (--timeline) equal the replica's saved bytes
#     plus the tensors its checkpoints hold (checkpoint_held_bytes).
#   cmake -DMEMEST=path -DSRC=dir -DCHECK=peak -DCASE=n -P check.cmake
#     the peak of live tensor bytes of a LoRA training step within 3% of PyTorch's
#     (tests/tools/lora_peak.py, tests/reference/lora_peaks.json).
#   cmake -DMEMEST=path -DSRC=dir -DCHECK=qlora -DCASE=n -P check.cmake
#     the same for a QLoRA step: nf4 base, --kbit-prep, LoRA, paged 8-bit AdamW, with and without
#     --checkpoint (tests/tools/qlora_peak.py, tests/reference/qlora_peaks.json).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../hf/memest_json.cmake)

if(CHECK STREQUAL "count")
  string(REPLACE "\\;" ";" ARGS "${ARGS}")   # the command line's escaped list
  memest_json(json ${ARGS})
  string(JSON trainable GET "${json}" lora trainable_params)
  string(JSON all GET "${json}" lora all_params)
  string(JSON line GET "${json}" lora print_trainable_parameters)
  message(STATUS "memest: ${line}")
  if(NOT trainable EQUAL TRAINABLE OR NOT all EQUAL ALL)
    message(FATAL_ERROR "trainable ${trainable} of ${all}, expected ${TRAINABLE} of ${ALL}")
  endif()
  if(NOT line STREQUAL LINE)
    message(FATAL_ERROR "print_trainable_parameters line:\n  ${line}\nexpected\n  ${LINE}")
  endif()
  memest_run(text ${ARGS})
  string(FIND "${text}" "\n${LINE}\n" at)
  if(at LESS 0)
    message(FATAL_ERROR "the text report lacks the line ${LINE}:\n${text}")
  endif()
elseif(CHECK STREQUAL "saved")
  file(READ ${SRC}/tests/reference/lora_figures.json ref)
  string(JSON config GET "${ref}" config)
  string(JSON batch GET "${ref}" batch)
  string(JSON seq GET "${ref}" seq_len)
  string(JSON c GET "${ref}" cases ${CASE})
  foreach(k dtype r alpha dropout targets checkpoint trainable_params all_params
            saved_activation_bytes_cuda_corrected checkpoint_held_bytes)
    string(JSON ${k} GET "${c}" ${k})
  endforeach()
  set(args ${config} --batch ${batch} --set seq_len=${seq} --lora ${r} --lora-alpha ${alpha}
           --lora-dropout ${dropout} --lora-targets ${targets})
  if(dtype STREQUAL "bfloat16")
    list(APPEND args --dtype bf16)
  else()
    list(APPEND args --dtype fp32)
  endif()
  math(EXPR want "${saved_activation_bytes_cuda_corrected} + ${checkpoint_held_bytes}")
  if(checkpoint STREQUAL "ON" OR checkpoint STREQUAL "true")
    set(csv ${CMAKE_CURRENT_BINARY_DIR}/lora_${CASE}.csv)
    list(APPEND args --checkpoint --timeline ${csv})
  endif()
  memest_json(json ${args})
  string(JSON got_trainable GET "${json}" lora trainable_params)
  string(JSON got_all GET "${json}" lora all_params)
  if(csv)
    # saved_activations (column 14) of the last forward event
    file(STRINGS ${csv} rows REGEX "^[0-9]+,forward,")
    list(GET rows -1 last)
    string(REPLACE "," ";" cols "${last}")
    list(GET cols 13 got)
    file(REMOVE ${csv})
  else()
    string(JSON got GET "${json}" memory activations)
  endif()
  message(STATUS "${CASE}: memest ${got} bytes saved, PyTorch ${want}; trainable ${got_trainable} of ${got_all}, PyTorch ${trainable_params} of ${all_params}")
  if(NOT got EQUAL want)
    message(FATAL_ERROR "${CASE}: saved ${got} bytes, the PyTorch replica ${want}")
  endif()
  if(NOT got_trainable EQUAL trainable_params OR NOT got_all EQUAL all_params)
    message(FATAL_ERROR "${CASE}: trainable ${got_trainable} of ${got_all}, PyTorch ${trainable_params} of ${all_params}")
  endif()
elseif(CHECK STREQUAL "peak")
  # memory.peak_tensors within 3% (as tests/hf/peaks.cmake) of tests/tools/lora_peak.py's
  # measurement (tests/reference/lora_peaks.json), case number CASE
  file(READ ${SRC}/tests/reference/lora_peaks.json ref)
  foreach(k config batch seq)
    string(JSON ${k} GET "${ref}" ${k})
  endforeach()
  foreach(k dtype memest_attention r alpha dropout targets peak_tensors)
    string(JSON ${k} GET "${ref}" cases ${CASE} ${k})
  endforeach()
  set(flag fp32)
  if(dtype STREQUAL "bfloat16")
    set(flag bf16)
  endif()
  memest_json(json ${config} --batch ${batch} --seq ${seq} --dtype ${flag} --attention ${memest_attention}
              --optim adam --optim-impl foreach --lora ${r} --lora-alpha ${alpha} --lora-dropout ${dropout}
              --lora-targets ${targets} --loop plain)   # the replica's loop
  string(JSON got GET "${json}" memory peak_tensors)
  # |got - want| <= 3% of want, in whole numbers
  math(EXPR off "100 * (${got} - ${peak_tensors})")
  math(EXPR tol "3 * ${peak_tensors}")
  message(STATUS "case ${CASE} (${dtype} ${targets} dropout ${dropout}): memest ${got}, PyTorch ${peak_tensors}")
  if(off GREATER tol OR off LESS -${tol})
    message(FATAL_ERROR "case ${CASE}: memest peak_tensors ${got}, PyTorch ${peak_tensors}: more than 3% apart")
  endif()
elseif(CHECK STREQUAL "qlora")
  # QLoRA (nf4 double-quantised base with bfloat16 compute, --kbit-prep, LoRA, paged 8-bit AdamW,
  # with and without --checkpoint): memory.peak_tensors within 3% of tests/tools/qlora_peak.py's
  # measurement (tests/reference/qlora_peaks.json), case number CASE. The compute dtype comes from a
  # config's quantization_config, as from_pretrained(quantization_config=BitsAndBytesConfig(...))
  # saves it: added here to the tiny config the measurement builds.
  file(READ ${SRC}/tests/reference/qlora_peaks.json ref)
  foreach(k config batch seq weights double_quant optim memest_attention)
    string(JSON ${k} GET "${ref}" ${k})
  endforeach()
  foreach(k dtype compute_dtype r alpha dropout targets checkpoint peak_tensors)
    string(JSON ${k} GET "${ref}" cases ${CASE} ${k})
  endforeach()
  if(NOT weights STREQUAL "nf4" OR NOT double_quant OR NOT dtype STREQUAL "bfloat16")
    message(FATAL_ERROR "qlora_peaks.json: nf4, double quantisation and bfloat16 expected")
  endif()
  file(READ ${SRC}/${config} cfg)
  string(JSON cfg SET "${cfg}" quantization_config "{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true,
    \"bnb_4bit_quant_type\": \"nf4\", \"bnb_4bit_use_double_quant\": true, \"bnb_4bit_compute_dtype\": \"${compute_dtype}\"}")
  set(qcfg ${CMAKE_CURRENT_BINARY_DIR}/qlora_${CASE}.json)
  file(WRITE ${qcfg} "${cfg}")
  set(args ${qcfg} --batch ${batch} --seq ${seq} --dtype bf16 --attention ${memest_attention} --optim ${optim}
           --kbit-prep --lora ${r} --lora-alpha ${alpha} --lora-dropout ${dropout} --lora-targets ${targets}
           --loop plain)   # the replica's loop
  if(checkpoint)
    list(APPEND args --checkpoint)
  endif()
  memest_json(json ${args})
  file(REMOVE ${qcfg})
  string(JSON wformat GET "${json}" weights format)
  string(JSON wcompute GET "${json}" weights compute_dtype)
  if(NOT wformat STREQUAL "nf4" OR NOT wcompute STREQUAL "bf16")
    message(FATAL_ERROR "case ${CASE}: weights ${wformat} computing in ${wcompute}, expected nf4 in bf16")
  endif()
  string(JSON got GET "${json}" memory peak_tensors)
  math(EXPR off "100 * (${got} - ${peak_tensors})")
  math(EXPR tol "3 * ${peak_tensors}")
  message(STATUS "case ${CASE} (${wformat} ${targets} dropout ${dropout} checkpoint ${checkpoint}): memest ${got}, PyTorch ${peak_tensors}")
  if(off GREATER tol OR off LESS -${tol})
    message(FATAL_ERROR "case ${CASE}: memest peak_tensors ${got}, PyTorch ${peak_tensors}: more than 3% apart")
  endif()
else()
  message(FATAL_ERROR "unknown CHECK ${CHECK}")
endif()
