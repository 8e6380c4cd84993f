# --loop (issue 33): what the training loop around the model holds
# (src/step/loop.c). Hand calculations of the difference a loop makes.
#
# Qwen2-0.5B (models/hf/qwen2-0.5b.json: vocab_size 151936, bf16), batch 1,
# seq 2048: the peak lies in the loss's backward. `plain` keeps the model's
# output, ForCausalLMLoss's float32 logits, to the end of the step
# (out = model(x)); the Trainer's compute_loss drops the outputs before
# backward and logits.float() is a local of the loss: the peak holds
# 1 x 2048 x 151936 x 4 = 1,244,659,712 bytes less, the rest unchanged.
add_test(NAME loop.trainer_drops_float_logits
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest>
                 "-DARGS_A=${PROJECT_SOURCE_DIR}/models/hf/qwen2-0.5b.json;--batch;1;--seq;2048;--loop;plain"
                 "-DARGS_B=${PROJECT_SOURCE_DIR}/models/hf/qwen2-0.5b.json;--batch;1;--seq;2048;--loop;trainer"
                 "-DFIELD=memory;peak_tensors" -DEXPECTED=1244659712
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/json_diff.cmake)
set_tests_properties(loop.trainer_drops_float_logits
                     PROPERTIES LABELS loop)
