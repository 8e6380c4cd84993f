# qlora_7b.cmake - the standard QLoRA step of Llama-2-7B, every byte by hand
# (issue 14's "a QLoRA step of a 7B model whose peak you can justify line by
# line"). The recipe is the QLoRA paper's / PEFT's as memest spells it:
#   models/hf/llama-2-7b.json --dtype bf16 --weights nf4 --double-quant
#   --kbit-prep --lora 16 --lora-alpha 32 --lora-dropout 0.05
#   --lora-targets all-linear --optim paged_adamw8bit --checkpoint
#   --seq 1024 --batch 1
# Each figure below is written from the libraries' rules, never copied from
# memest's output:
#   bitsandbytes 0.49.2 functional.py quantize_4bit (block 64, nested
#     quantize_blockwise in blocks of 256) and MatMul4Bit.backward;
#   PEFT v0.17.1 (LoRA on all-linear: every nn.Linear but lm_head; float32
#     adapters), prepare_model_for_kbit_training (v0.13.2: non-4-bit
#     parameters to float32);
#   bitsandbytes 0.50.2.dev0 optim/optimizer.py Optimizer2State.init_state
#     (8-bit from 4096 elements, absmax per 256, paged from 100,000);
#   torch.utils.checkpoint (use_reentrant=True) and PyTorch's caching
#     allocator (c10/cuda/CUDACachingAllocator.cpp: 512-byte rounding, a
#     request over 10 MiB gets its own segment rounded to 2 MiB and keeps
#     the remainder when that is not over 1 MiB, kSmallSize).
# Llama-2-7B: hidden 4096, intermediate 11008, 32 layers, 32 heads of 128,
# vocabulary 32000, untied head. Two cases: --weights nf4 (bitsandbytes'
# default compute dtype, float32), and tests/hf/llama-2-7b-qlora.json, the
# same config with the QLoRA paper's quantization_config
# (bnb_4bit_compute_dtype bfloat16), which moves the peak.
#   cmake -DMEMEST=... -DSRC=<source dir> -P qlora_7b.cmake
# check(<json> <"path=expression" ...>): each --json figure at the key path
# (space-separated) equals the hand expression (or, when it is no
# arithmetic, the string).
function(check json)
  foreach(c ${ARGN})
    string(FIND "${c}" "=" eq)
    string(SUBSTRING "${c}" 0 ${eq} path)
    math(EXPR eq "${eq} + 1")
    string(SUBSTRING "${c}" ${eq} -1 want)
    if(want MATCHES "^[0-9 +*/()-]+$")
      math(EXPR want "${want}")
    endif()
    string(REPLACE " " ";" keys "${path}")
    string(JSON got GET "${json}" ${keys})
    if(NOT got STREQUAL want)
      message(FATAL_ERROR "${path}: memest ${got}, by hand ${want}")
    endif()
  endforeach()
endfunction()

# memest(<out var> <file> <options>...): the recipe's --json on a model file
set(recipe --loop plain --dtype bf16 --kbit-prep --lora 16 --lora-alpha 32 --lora-dropout 0.05 --lora-targets all-linear
           --optim paged_adamw8bit --checkpoint --seq 1024 --batch 1 --json)
function(memest var file)
  execute_process(COMMAND ${MEMEST} ${file} ${recipe} ${ARGN}
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "memest ${file}: exit ${rc}: ${err}")
  endif()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()
memest(out models/hf/llama-2-7b.json --weights nf4 --double-quant)

macro(calc var expr)
  math(EXPR ${var} "${expr}")
endmacro()

# ---- shapes -------------------------------------------------------------
calc(nA "4096 * 4096")          # q/k/v/o_proj weight [4096, 4096]: 16,777,216 values
calc(nM "11008 * 4096")         # gate/up_proj [11008, 4096], down_proj [4096, 11008]: 45,088,768
calc(S  "1024")                 # tokens (batch 1 x sequence 1024)

# ---- nf4 weights with double quantisation, per linear layer of n values -
# packed uint8 n/2 (two 4-bit codes a byte), absmax quantised to uint8 (one
# per block of 64: n/64 bytes), the 16-value float32 nf4 code (64 B), the
# nested float32 absmax (one per 256 absmax values), the nested 256-value
# float32 code (1,024 B) and the float32 offset absmax.mean() (4 B).
calc(qA "${nA} / 2 + ${nA} / 64 + 64 + 4 * ((${nA} / 64 + 255) / 256) + 1024 + 4") # 8,655,940
calc(qM "${nM} / 2 + ${nM} / 64 + 64 + 4 * ((${nM} / 64 + 255) / 256) + 1024 + 4") # 23,260,996
calc(nf4 "32 * (4 * ${qA} + 3 * ${qM})")                                         # 3,341,015,936
# ---- what kbit-prep leaves dense, in float32 ----------------------------
calc(dense "4 * (2 * 32000 * 4096 + (2 * 32 + 1) * 4096)") # embed_tokens, lm_head, 65 RMSNorms: 1,049,640,960
# ---- LoRA r=16 on the 7 linear layers of each block: A [16, in], B [out, 16]
calc(lora "32 * 16 * (4 * (4096 + 4096) + 3 * (4096 + 11008))") # 39,976,960 parameters
calc(lora_bytes "4 * ${lora}")                                   # float32 adapters (and gradients)
calc(frozen "2 * 32000 * 4096 + 65 * 4096 + 32 * (4 * ${nA} + 3 * ${nM})") # 6,738,415,616 (nf4 as out*in)
calc(params_bytes "${nf4} + ${dense} + ${lora_bytes}")           # 4,550,564,736
calc(buffers "4 * 64")                                           # rotary inv_freq, float32 [64]

# ---- paged_adamw8bit on the adapters ------------------------------------
# Per block: 11 tensors of 65,536 values (A of q,k,v,o,gate,up; B of
# q,k,v,o,down): 8-bit, under 100,000 so on the device; 3 of 176,128 (A of
# down, B of gate and up): 8-bit and paged. Two uint8 states each, two
# float32 absmax per 256 values each, and two 256-value float32 maps once.
calc(opt_paged "32 * 3 * 2 * 176128")                                     # 33,816,576
calc(opt_dev "32 * (11 * 2 * 65536 + 11 * 2 * 4 * 256 + 3 * 2 * 4 * 688) + 2 * 1024") # 47,388,672

# ---- the peak: backward of layer 31's down_proj -------------------------
# The last block is recomputed (checkpointing goes backward from the last
# block) and its down_proj, the first layer the backward meets, runs
# MatMul4Bit.backward: dequantize_4bit(B) in the weight's dtype (bf16, 2n)
# then .to(grad_output.dtype) (float32, 4n) before grad_A is computed.
calc(h "${S} * 4096 * 4")       # a float32 hidden state (kbit-prep makes them float32): 16,777,216
calc(m "${S} * 11008 * 4")      # a float32 MLP-wide state: 45,088,768
calc(drop4 "${h} + ${S} * 4096 + ${S} * 16 * 4") # dropout output (saved by lora_A), bool mask, lora_A output
# Saved tensors live at the peak:
#   kept by the forward: 32 block inputs (embedding output and the outputs
#   of blocks 0-30; the checkpoint's inputs) and RoPE's cos and sin
#   [1, 1024, 128] float32, made once outside the blocks;
calc(kept "32 * ${h} + 2 * ${S} * 128 * 4")
#   the recomputed block 31 until down_proj: input RMSNorm's float32 rstd
#   [1024, 1]; q/k/v/o adapters' dropout output, mask, lora_A output;
#   SDPA's q, k, v, output and float32 logsumexp [1, 32, 1024]; the residual
#   sum the post-attention RMSNorm saves and its rstd; gate and up adapters
#   as above plus their outputs (saved by SiLU and by the product); SiLU's
#   output (saved by the product). down_proj's own adapter tensors are
#   already freed by its LoRA branch's backward.
calc(recomputed "4 * ${S} + 4 * ${drop4} + 4 * ${h} + 32 * ${S} * 4 + ${h} + 4 * ${S} + 2 * (${drop4} + ${m}) + ${m}")
calc(saved "${kept} + ${recomputed}")                           # 883,433,472
# memory.activations is what the forward would save without checkpointing
# (the loss's log-softmax aside): per block its input (saved by the input
# RMSNorm), the recomputed tensors above and down_proj's adapter (dropout
# output [1024, 11008] float32, its bool mask, lora_A's output); RoPE's cos
# and sin; the final RMSNorm's input and rstd. Block 0's input is the frozen
# embedding's output, which requires no grad (PEFT's
# enable_input_require_grads hook is not modelled): its input RMSNorm and
# the q/k/v adapters' dropout save nothing for it (h + 4,096 + 3 masks).
calc(drop11 "${m} + ${S} * 11008 + ${S} * 16 * 4")
calc(activations "32 * (${h} + ${recomputed} + ${drop11}) + 2 * ${S} * 128 * 4 + ${h} + 4 * ${S} - (${h} + 4 * ${S} + 3 * ${S} * 4096)")
# Transient: the float32 logits [1024, 32000] the loop holds as the model's
# output, the 0-d loss, and the recomputed block's output (CheckpointFunction.
# backward's `outputs`, alive while it runs autograd.backward on them).
# The logits are memest's plain loop (`out = model(x); loss = crit(out, y);
# loss.backward()`, `out` alive to the end); transformers' Trainer drops them
# before the backward (Trainer.compute_loss returns only the loss; read from
# memory of v4.48 trainer.py, not checked here): its peak would be
# 131,072,000 B lower.
calc(transient "${S} * 32000 * 4 + 4 + ${h}")
# Activation gradients: the incoming gradient of block 31's output (also
# down_proj's output gradient), the gradient of down_proj's input through
# the adapter (waiting to be summed with the base path's), and
# MatMul4Bit.backward's bf16 dequantised weight and its float32 copy.
calc(agrad "${h} + ${m} + 2 * ${nM} + 4 * ${nM}")               # 332,398,592
# Parameter gradients in flight: down_proj's lora_B [4096, 16] and lora_A
# [16, 11008], float32 (zero_grad(set_to_none) freed the last step's).
calc(grads "4 * 16 * (4096 + 11008)")                            # 966,656
calc(inputs "2 * ${S} * 8")                                      # input_ids and labels, int64
# Two cuBLAS workspaces of the default ":4096:2:16:8": the main thread's and
# the autograd engine's device thread's (one per handle and stream,
# CublasHandlePool.cpp; handles are per thread).
calc(workspace "2 * (4096 * 1024 * 2 + 16 * 1024 * 8)")
calc(peak_tensors "${params_bytes} + ${buffers} + ${opt_dev} + ${saved} + ${transient} + ${agrad} + ${grads} + ${inputs}")
# The allocator's blocks: 512-byte rounding (code 64 -> 512, offset 4 ->
# 512, nested absmax 11,008 -> 11,264 per MLP layer, inv_freq 256 -> 512,
# the loss 4 -> 512, optimizer absmax 2,752 -> 3,072); each MLP layer's
# packed weight of 22,544,384 B takes a 2 MiB-rounded segment of
# 23,068,672 whole (the 524,288 B left is under 1 MiB: not split).
calc(params_blocks "${params_bytes} + 224 * (448 + 508) + 96 * 256 + 96 * (23068672 - 22544384)")
calc(opt_blocks "${opt_dev} + 32 * 3 * 2 * 320")
calc(peak "${params_blocks} + 512 + ${opt_blocks} + ${saved} + ${transient} + 508 + ${agrad} + ${grads} + ${inputs} + ${workspace}")

set(checks
  "params total=${frozen} + ${lora}" "params trainable=${lora}" "params frozen=${frozen}"
  "lora trainable_params=${lora}" "memory parameters=${params_bytes}" "memory buffers=${buffers}"
  "memory gradients=${lora_bytes}" "memory optimizer_state=${opt_dev}"
  "memory optimizer_state_paged=${opt_paged}" "memory activations=${activations}" "memory peak=${peak}" "memory peak_tensors=${peak_tensors}"
  "memory at_peak parameters=${params_blocks}" "memory at_peak buffers=512"
  "memory at_peak gradients=${grads}" "memory at_peak optimizer_state=${opt_blocks}"
  "memory at_peak inputs=${inputs}" "memory at_peak saved_activations=${saved}"
  "memory at_peak transient=${transient} + 508" "memory at_peak activation_gradients=${agrad}"
  "memory at_peak optimizer_temporaries=0" "memory at_peak workspace=${workspace}")
check("${out}" ${checks} "memory peak_phase=backward" "memory peak_node=model.layers.31.mlp.down_proj")

# ---- the same with bnb_4bit_compute_dtype=bfloat16 -----------------------
# Everything but the peak is unchanged. Block 31's down_proj backward now
# holds grad_output.to(bf16), the bf16 dequantised weight (2n) and grad_A in
# bf16 (no float32 copy of the weight): 121,110,528 B with the float32 input
# gradient made after, less than before. The SiLU-times-up product after it
# (memest's one node act_mul) holds h into block 31 and at most three m-sized
# gradients (autograd frees the incoming one after MulBackward0, before
# SiluBackward runs): h + 3m = 152,043,520 B, below the down_proj moment's
# h + m + 121,110,528 = 182,976,512 B of activation gradients, so the peak
# stays in down_proj's backward.
memest(outb tests/hf/llama-2-7b-qlora.json)
calc(agrad_b "${h} + ${m} + 121110528")
# The logits (131,072,000 B) find no cached block this time: a fresh segment
# rounded to 2 MiB, 132,120,576 B, whose 1 MiB remainder is not split (the
# float32 case reused a freed 226,492,416-byte segment of the forward's
# dequantised weights).
calc(transient_b "${transient} + 508 + 132120576 - 131072000")
calc(peak_b "${peak} - ${agrad} + ${agrad_b} - ${transient} - 508 + ${transient_b}")
calc(peak_tensors_b "${peak_tensors} - ${agrad} + ${agrad_b}")
check("${outb}" "weights compute_dtype=bf16" "memory parameters=${params_bytes}" "memory gradients=${lora_bytes}"
      "memory optimizer_state=${opt_dev}" "memory optimizer_state_paged=${opt_paged}" "memory peak=${peak_b}"
      "memory peak_tensors=${peak_tensors_b}" "memory at_peak parameters=${params_blocks}"
      "memory at_peak gradients=${grads}" "memory at_peak saved_activations=${saved}"
      "memory at_peak transient=${transient_b}" "memory at_peak activation_gradients=${agrad_b}"
      "memory peak_phase=backward" "memory peak_node=model.layers.31.mlp.down_proj")
