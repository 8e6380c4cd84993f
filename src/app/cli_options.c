/* cli_options.c - every option of memest as one row (options.h): its
 * names, argument, group, the modes that accept it, what it needs, its
 * field, bounds or value table, default and words. The parser, --help, the
 * man page, the completions and doc/options.md are read off these rows
 * (tests/tools/gen_docs.py, the ctest docs.options_agree), and so are the
 * subcommands (the mode table below). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli_internal.h"
#include "memest/cuda_overhead.h"
#include "memest/fp8.h"
#include "memest/format.h"
#include "memest/generate.h"
#include "memest/optim.h"

/* ---- the modes and groups ---- */

static const struct memest_mode_desc modes[MEMEST_MODE_COUNT] = {
    [MEMEST_MODE_ESTIMATE] = {"estimate", "an estimate", NULL,
                              "one training step (or --inference): memory, FLOPs, time",
                              "MODEL"},
    [MEMEST_MODE_SWEEP] = {"sweep", "a sweep", "--sweep or --sweep-var",
                           "a table over batch sizes (LIST) or a model variable",
                           "MODEL [LIST]"},
    [MEMEST_MODE_MAX_BATCH] = {"max-batch", "the search for the largest batch", "--max-batch",
                               "the largest batch that fits the card", "MODEL"},
    [MEMEST_MODE_FIT] = {"fit", "a fit verdict", "--fit",
                         "a one-line verdict for CI: exit 1 when it does not fit", "MODEL"},
    [MEMEST_MODE_COMPARE] = {"compare", "a comparison of cards", "--gpu all or a list",
                             "every card (or a --gpu list) at one batch, and each one's largest",
                             "MODEL"},
    [MEMEST_MODE_ADVISE] = {"advise", "advice", "--advise",
                            "ways to save memory, each with its figures", "MODEL"},
    [MEMEST_MODE_GENERATE] = {"generate", "generation", "--generate",
                              "text generation: the prefill and the decode with the KV cache",
                              "MODEL"},
};

const struct memest_mode_desc *memest_mode_desc(enum memest_mode m)
{
    return &modes[m];
}

int memest_mode_parse(const char *s)
{
    for (int m = 0; m < MEMEST_MODE_COUNT; m++)
        if (strcmp(s, modes[m].name) == 0)
            return m;
    return -1;
}

static const struct memest_group_desc groups[MEMEST_GROUP_COUNT] = {
    [MEMEST_GROUP_STEP] = {"step", "The step"},
    [MEMEST_GROUP_LLM] = {"llm", "LLMs (Hugging Face config.json, models/arch/)"},
    [MEMEST_GROUP_LORA] = {"lora", "Fine-tuning"},
    [MEMEST_GROUP_GENERATE] = {"serving", "Generation and serving"},
    [MEMEST_GROUP_DIST] = {"dist", "Several GPUs"},
    [MEMEST_GROUP_CARD] = {"card", "The card"},
    [MEMEST_GROUP_OUTPUT] = {"output", "Output"},
};

const struct memest_group_desc *memest_group_desc(enum memest_group g)
{
    return &groups[g];
}

int memest_group_parse(const char *s)
{
    for (int g = 0; g < MEMEST_GROUP_COUNT; g++)
        if (strcmp(s, groups[g].name) == 0)
            return g;
    return -1;
}

/* ---- the value tables: each module's own, read through its functions ---- */

/* id_name(int) and id_parse(const char *, int *) over a module's
 * name and parse functions of enum type T */
#define VOCAB_FNS(id, T, name_fn, parse_fn)                                   \
    static const char *id##_name(int v)                                       \
    {                                                                         \
        return name_fn((T)v);                                                 \
    }                                                                         \
    static int id##_parse(const char *s, int *v)                              \
    {                                                                         \
        T k;                                                                  \
        if (parse_fn(s, &k) != 0)                                             \
            return -1;                                                        \
        *v = (int)k;                                                          \
        return 0;                                                             \
    }

VOCAB_FNS(optim, enum memest_optim, memest_optim_name, memest_optim_parse)
VOCAB_FNS(impl, enum memest_optim_impl, memest_optim_impl_name, memest_optim_impl_parse)
VOCAB_FNS(amp, enum memest_amp, memest_amp_name, memest_amp_parse)
VOCAB_FNS(loss, enum memest_loss, memest_loss_name, memest_loss_parse)
VOCAB_FNS(dtype, enum memest_dtype, memest_dtype_name, memest_dtype_parse)
VOCAB_FNS(attention, uint8_t, memest_attention_name, memest_attention_parse)
VOCAB_FNS(fp8, uint8_t, memest_fp8_name, memest_fp8_parse)
VOCAB_FNS(rnn_kernel, uint8_t, memest_rnn_kernel_name, memest_rnn_kernel_parse)
VOCAB_FNS(schedule, enum memest_schedule, memest_schedule_name, memest_schedule_parse)
VOCAB_FNS(strategy, enum memest_strategy, memest_strategy_name, memest_strategy_parse)
VOCAB_FNS(offload, enum memest_offload, memest_offload_name, memest_offload_parse)

static const char *zero_grad_name(int v)
{
    return memest_zero_grad_name((enum memest_zero_grad)v);
}

static const char *fused_name(int v)
{
    return memest_fused_name(v);
}

/* --dtype: the floating types a model runs in */
static bool takes_param_dtype(int v)
{
    return memest_dtype_is_float((enum memest_dtype)v) && v != MEMEST_F64;
}

/* --compute-dtype: bnb_4bit_compute_dtype's */
static bool takes_compute_dtype(int v)
{
    return v == MEMEST_F32 || v == MEMEST_F16 || v == MEMEST_BF16;
}

/* --quant-storage: the types bitsandbytes packs 4-bit values into */
static bool takes_quant_storage(int v)
{
    return v == MEMEST_U8 || v == MEMEST_F32 || v == MEMEST_F16 || v == MEMEST_BF16;
}

static bool takes_not_none(int v)
{
    return v != 0;   /* MEMEST_STRAT_NONE, MEMEST_OFFLOAD_NONE: the absence of the option */
}

/* --kv-dtype: a half type, or one byte as vLLM's fp8 and int8 caches store it */
static const char *kv_dtype_name(int v)
{
    switch (v) {
    case MEMEST_F16:
    case MEMEST_BF16:
        return memest_dtype_name((enum memest_dtype)v);
    case MEMEST_U8:
        return "fp8";
    case MEMEST_I8:
        return "int8";
    default:
        return NULL;
    }
}

static int kv_dtype_parse(const char *s, int *v)
{
    enum memest_dtype t;
    if (memest_dtype_parse(s, &t) != 0 || !memest_dtype_is_half(t))
        return -1;   /* uint8 is not fp8: the names only */
    *v = (int)t;
    return 0;
}

/* --torch: 0 (2.x) or 113 */
static const char *torch_name(int v)
{
    return v == 0 ? "2" : v == 113 ? "1.13" : NULL;
}

static int torch_parse(const char *s, int *v)
{
    uint16_t t;
    if (memest_torch_parse(s, &t) != 0)
        return -1;
    *v = t;
    return 0;
}

static const char *loop_name(int v)
{
    return memest_loop_name((enum memest_loop)v);
}

static int loop_parse(const char *s, int *v)
{
    enum memest_loop l;
    if (memest_loop_parse(s, &l) != 0)
        return -1;
    *v = (int)l;
    return 0;
}

static const char *cache_name(int v)
{
    return v == MEMEST_CACHE_DYNAMIC ? "dynamic" : v == MEMEST_CACHE_STATIC ? "static" : NULL;
}

const struct memest_weights_name memest_weights_names[MEMEST_WEIGHTS_NAMES] = {
    {"int8", MEMEST_WF_INT8}, {"nf4", MEMEST_WF_NF4},   {"fp4", MEMEST_WF_FP4},
    {"int4", MEMEST_WF_GPTQ4}, {"gptq", MEMEST_WF_GPTQ4}, {"awq", MEMEST_WF_AWQ4},
    {"mxfp4", MEMEST_WF_MXFP4}, {"fp8", MEMEST_WF_FP8}, {"nvfp4", MEMEST_WF_NVFP4},
    {"dense", MEMEST_WF_DENSE},
};

static const char *weights_name(int v)
{
    return memest_weights_names[v].name;
}

static const struct memest_vocab vocab_optim = {optim_name, optim_parse, 0, MEMEST_OPT_COUNT, NULL};
static const struct memest_vocab vocab_impl = {impl_name, impl_parse, 0, MEMEST_IMPL_COUNT, NULL};
static const struct memest_vocab vocab_zero_grad = {zero_grad_name, NULL, 0, MEMEST_ZERO_GRAD_COUNT,
                                                    NULL};
static const struct memest_vocab vocab_dtype = {dtype_name, dtype_parse, 0, MEMEST_DTYPE_COUNT,
                                                takes_param_dtype};
/* from 1: no autocast is the absence of --amp, not a value of it */
static const struct memest_vocab vocab_amp = {amp_name, amp_parse, MEMEST_AMP_NONE + 1,
                                              MEMEST_AMP_COUNT, NULL};
static const struct memest_vocab vocab_loss = {loss_name, loss_parse, 0, MEMEST_LOSS_COUNT, NULL};
static const struct memest_vocab vocab_fp8 = {fp8_name, fp8_parse, 0, MEMEST_FP8_COUNT, NULL};
static const struct memest_vocab vocab_rnn_kernel = {rnn_kernel_name, rnn_kernel_parse, 0,
                                                     MEMEST_RNN_KERNEL_COUNT, NULL};
static const struct memest_vocab vocab_attention = {attention_name, attention_parse, 0,
                                                    MEMEST_ATTN_COUNT, NULL};
const struct memest_vocab memest_vocab_fused = {fused_name, NULL, 0, MEMEST_FUSED_COUNT, NULL};
static const struct memest_vocab vocab_torch = {torch_name, torch_parse, 0, 114, NULL};
static const struct memest_vocab vocab_loop = {loop_name, loop_parse, MEMEST_LOOP_PLAIN,
                                               MEMEST_LOOP_COUNT, NULL};
const struct memest_vocab memest_vocab_weights = {weights_name, NULL, 0, MEMEST_WEIGHTS_NAMES,
                                                  NULL};
const struct memest_vocab memest_vocab_compute_dtype = {dtype_name, dtype_parse, 0,
                                                        MEMEST_DTYPE_COUNT, takes_compute_dtype};
static const struct memest_vocab vocab_kv_dtype = {kv_dtype_name, kv_dtype_parse, 0,
                                                   MEMEST_DTYPE_COUNT, NULL};
static const struct memest_vocab vocab_cache = {cache_name, NULL, 0, 2, NULL};
static const struct memest_vocab vocab_schedule = {schedule_name, schedule_parse, 0,
                                                   MEMEST_SCHED_COUNT, NULL};
static const struct memest_vocab vocab_strategy = {strategy_name, strategy_parse, 0,
                                                   MEMEST_STRAT_COUNT, takes_not_none};
static const struct memest_vocab vocab_fsdp_policy = {memest_fsdp_policy_name, NULL,
                                                      MEMEST_FSDP_POLICY_LAYERS,
                                                      MEMEST_FSDP_POLICY_COUNT, NULL};
static const struct memest_vocab vocab_offload = {offload_name, offload_parse, 0,
                                                  MEMEST_OFFLOAD_COUNT, takes_not_none};
#define vocab_fused memest_vocab_fused
#define vocab_weights memest_vocab_weights
#define vocab_compute_dtype memest_vocab_compute_dtype
static const struct memest_vocab vocab_quant_storage = {dtype_name, dtype_parse, 0,
                                                        MEMEST_DTYPE_COUNT, takes_quant_storage};

/* "426 MiB": one default for every card (cuda_overhead.c: no
 * per-generation figure is published) */
static const char *default_overhead(char *buf, size_t n)
{
    char mib[32];
    memest_fmt_double((double)memest_default_overhead(0) / 1048576.0, mib, sizeof mib);
    snprintf(buf, n, "%s MiB", mib);
    return buf;
}

/* ---- the rows ---- */

#define FIELD(f) .off = offsetof(struct memest_cli, f), .size = sizeof(((struct memest_cli *)0)->f)
#define GIVEN(f) .given_off = offsetof(struct memest_cli, f)
#define MAX53 (((uint64_t)1 << 53) - 1)

const struct memest_opt memest_opts[] = {
    {.name = "batch",
     .shrt = 'b',
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "N",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(batch),
     GIVEN(batch_set),
     .lo = 1,
     .hi = (double)MAX53,
     .dflt = "1",
     .help = "batch size"},
    {.name = "optim",
     .shrt = 'o',
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "NAME",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(step.optim.kind),
     GIVEN(optim_set),
     .vocab = &vocab_optim,
     .help = "the optimizer",
     .doc = "bitsandbytes' `adam8bit`, `adamw8bit`, `paged_adam8bit`, `paged_adamw8bit`, "
             "`paged_adamw`, `paged_adamw32bit` are its 8-bit and paged optimizers "
             "(doc/fine-tuning.md); `adafactor` is torch.optim.Adafactor, `hf_adafactor` "
             "transformers' Adafactor (the Trainer's optim=\"adafactor\": float32 state and "
             "temporaries per parameter); `muon` is torch.optim.Muon (PyTorch 2.9) over the "
             "2-D hidden matrices with torch.optim.AdamW over the embeddings, the output head "
             "and the 1-D parameters, its Newton-Schulz FLOPs in `flops.optimizer`; under "
             "ZeRO and FSDP Moonlight's Distributed Muon (each rank's partition of the momentum, "
             "each matrix gathered whole in bf16 for its update; tensor, context, pipeline and "
             "expert parallelism and --offload: an error); `hf_adafactor` on one GPU or under "
             "DDP (ZeRO, FSDP and model parallelism: an error)"},
    {.name = "momentum",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "M",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_REAL,
     FIELD(step.optim.momentum),
     GIVEN(momentum_set),
     .lo = 0,
     .hi = 1,
     .dflt = "0",
     .help = "momentum for sgd and rmsprop",
     .doc = "momentum for `sgd` and `rmsprop`"},
    {.name = "amsgrad",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(step.optim.amsgrad),
     .help = "adam/adamw with amsgrad (one more state copy)",
     .doc = "Adam/AdamW with amsgrad, centered RMSprop"},
    {.name = "centered",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(step.optim.centered),
     .help = "centered rmsprop (one more state copy)"},
    {.name = "optim-impl",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "I",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(step.impl),
     GIVEN(impl_set),
     .vocab = &vocab_impl,
     .help = "the optimizer's implementation",
     .doc = "`foreach` is PyTorch 2.x's default on CUDA"},
    {.name = "first-step",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(step.first_step),
     .help = "the first step: optimizer state is created during it",
     .doc = "simulate the first step (optimizer state created during it) instead of the "
             "steady state"},
    {.name = "zero-grad",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "MODE",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(step.zero_grad_zeros),
     GIVEN(zero_grad_set),
     .vocab = &vocab_zero_grad,
     .help = "zero_grad(): none (set_to_none, gradients born in backward) or zeros (they "
             "persist)",
     .doc = "`none` is `zero_grad(set_to_none=True)`: the gradients are born in the "
             "backward; with `zeros` they persist"},
    {.name = "dtype",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "T",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(dtype),
     GIVEN(dtype_set),
     .vocab = &vocab_dtype,
     .help = "parameter and activation type"},
    {.name = "amp",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "T",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(step.amp),
     .vocab = &vocab_amp,
     .help = "autocast mixed precision",
     .doc = "autocast mixed precision, `fp16` or `bf16`, with float32 parameters, gradients "
             "and optimizer state"},
    {.name = "rnn-kernel",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "K",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(run.rnn_kernel),
     .vocab = &vocab_rnn_kernel,
     .parse = memest_optp_after_rnn_kernel,
     .dflt = "cudnn",
     .help = "what lstm/gru/rnn nodes run on CUDA",
     .doc = "`cudnn` (the default, as PyTorch on CUDA with cuDNN enabled): one `_cudnn_rnn` "
             "per module, saving its input, output, initial states and cuDNN's reserve space "
             "(its size an estimate: doc/rnn.md); `native`: ATen's step-by-step kernels "
             "(`torch.backends.cudnn.enabled = False`), the saved tensors a CPU run shows; "
             "`native` for a model without recurrent layers is refused"},
    {.name = "fp8",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "R",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_ALL,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(run.fp8),
     .vocab = &vocab_fp8,
     .parse = memest_optp_after_fp8,
     .help = "float8 training of the linear layers",
     .doc = "float8 training of the linear layers but the output head (those whose features "
             "are multiples of 16; 32 for `te-mxfp8`): `ao-tensorwise` (torchao.float8 "
             "`convert_to_float8_training`, its default recipe, eager: the layer saves what "
             "nn.Linear saves and casts each GEMM operand), `ao-rowwise` (its `rowwise` recipe: "
             "scales per row, float32 post-scales in the backward's GEMMs), `te-delayed`, `te-current` "
             "(Transformer Engine `te.Linear` under `fp8_autocast` with `DelayedScaling` or "
             "`Float8CurrentScaling`, Hopper: saves the float8 input's transpose and the float8 "
             "weight with its transpose; DelayedScaling keeps a 1024-step amax history), "
             "`te-mxfp8` (`MXFP8BlockScaling`, Blackwell: E8M0 scales per 32 elements); "
             "with a model in --dtype bf16 or fp32 (not --amp), without --lora"},
    {.name = "grad-accum",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "N",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(step.grad_accum),
     GIVEN(grad_accum_set),
     .lo = 1,
     .hi = 1048576,
     .dflt = "1",
     .help = "accumulate N micro-batches of --batch per step",
     .doc = "N micro-batches of `--batch` per optimizer step"},
    {.name = "checkpoint",
     .arg = MEMEST_ARG_OPTIONAL,
     .metavar = "B,..",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_checkpoint,
     .help = "activation checkpointing: every block, or blocks B",
     .doc = "activation checkpointing (`torch.utils.checkpoint`) of every top-level block "
             "instance, or of the blocks named (a block, an instance such as `h.3`, or a "
             "repeated node such as `h`); the recomputation is the reentrant one (the default of "
             "PyTorch 2.6 and transformers' `gradient_checkpointing_enable`), except under `--loop "
             "torchtitan`, `--loop torchtune` or `--checkpoint-policy torchtitan-op`: torch's "
             "`checkpoint_wrapper` (torchtitan's `ptd_checkpoint_wrapper`, torchtune's "
             "`set_activation_checkpointing`), non-reentrant (the recomputed block's output is not "
             "kept; early_stop on under torchtune, off under torchtitan: `--checkpoint-early-stop`). A checkpointed block keeps the model's attention mask as an input (eager "
             "attention, or SDPA given a mask) until the backward of the first block reading it"},
    {.name = "checkpoint-policy",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "P",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_checkpoint_policy,
     .help = "what a checkpointed block keeps: full or torchtitan-op",
     .doc = "checkpointing of every top-level block (implies `--checkpoint`; refused with its block "
             "names): `full` recomputes the whole block; `torchtitan-op` is torchtitan's op-level "
             "selective checkpointing (v0.2.0 `_apply_op_sac`, `selective_ac_option = \"op\"`): the "
             "outputs of a bias-free linear's mm (every second one in each block's forward is "
             "recomputed) and of the flash, memory-efficient and cuDNN attention kernels are kept "
             "from the forward, everything else is recomputed, non-reentrant"},
    {.name = "checkpoint-every",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "N",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_checkpoint_every,
     .help = "checkpoint every N-th top-level block",
     .doc = "torchtitan's per-layer selective checkpointing (`selective_ac_option = \"N\"`, "
             "`_apply_layer_sac`): the top-level block instances i (from 0, in model order) with "
             "(i + 1) % N == 0 are checkpointed, the others not (torchtitan's \"0\", every block, is "
             "`--checkpoint`); implies `--checkpoint` (refused with its block names and with "
             "`--checkpoint-policy torchtitan-op`)"},
    {.name = "checkpoint-early-stop",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "B",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_checkpoint_early_stop,
     .help = "on or off: the non-reentrant recomputation stops early",
     .doc = "the non-reentrant checkpoint's `early_stop` (PyTorch 2.6 `torch/utils/checkpoint.py`: "
             "the recomputation raises `_StopRecomputationError` once the block's last saved "
             "tensor is made again, so the nodes after the last one saving a tensor are not run "
             "again); default on under `--loop torchtune` (PyTorch's default, which torchtune's "
             "`set_activation_checkpointing` keeps) and off under `--loop torchtitan` "
             "(`ActivationCheckpoint.early_stop`); refused with the reentrant checkpoint"},
    {.name = "loss",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "NAME",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(step.loss),
     GIVEN(step.loss_set),
     .vocab = &vocab_loss,
     .help = "the loss",
     .doc = "a model file's `\"loss\"` replaces the default; cross-entropy and NLL take the classes along "
             "dim 1 of the output, as PyTorch does, unless the model file's loss sets "
             "class_dim -1 (a language model's out.view(-1, V): models/README.md)"},
    {.name = "inference",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_M(ESTIMATE)|MEMEST_M(SWEEP)|MEMEST_M(MAX_BATCH)|MEMEST_M(FIT)|MEMEST_M(COMPARE)|MEMEST_M(ADVISE),
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(inference),
     .help = "report the no-grad forward pass instead",
     .doc = "report the no-grad forward pass (`model.eval()`, `torch.no_grad()`) instead; "
             "the training step's options (`--optim`, `--momentum`, `--amsgrad`, "
             "`--centered`, `--optim-impl`, `--first-step`, `--zero-grad`, `--grad-accum`, "
             "`--checkpoint`, `--loss`, `--fused linear-ce`, `--lora-dropout`) are refused "
             "with it, as with `--generate`"},
    {.name = "set",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "NAME=VAL",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_set,
     .help = "override a model variable (repeatable, once per variable; tp, sp and ep are "
             "--tp's, --sequence-parallel's and --ep's)",
     .doc = "override a model variable (e.g. `--set seq_len=512`), once per variable "
             "(`--seq` and `--context` set `seq_len`); `tp`, `sp` and `ep` belong to `--tp`, "
             "`--sequence-parallel` and `--ep`, which set them with their layout, and are "
             "refused here and in `--sweep-var`"},
    {.name = "seq",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "N",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_STEP,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_seq,
     .help = "sequence length: the model variable seq_len",
     .doc = "the sequence length: sets the model variable `seq_len` (every architecture of "
             "`models/arch/` has it; see LLMs)"},
    {.name = "attention",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "K",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(run.attention),
     .vocab = &vocab_attention,
     .parse = memest_optp_after_attention,
     .help = "the kernel of scaled_dot_product_attention",
     .doc = "`auto`: what transformers' `sdpa` attention and PyTorch's dispatcher pick; "
             "`eager`: transformers' eager attention; also the kernel of "
             "`multiheadattention` nodes with `need_weights` false under PyTorch 2.x "
             "(`eager` counts as `auto` there); a kernel named for a model without either is "
             "refused (it would change nothing)"},
    {.name = "fused",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "LIST",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .vocab = &vocab_fused,
     .parse = memest_optp_fused,
     .dflt = "none",
     .help = "fused kernels, a comma-separated list (or all: every kernel that applies)",
     .doc = "each kernel with its own saved tensors; `linear-ce`: the loss never "
             "materialises the logits (doc/llms.md); a kernel named that no op of the model "
             "runs is refused"},
    {.name = "moe-imbalance",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "F",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_REAL,
     FIELD(run.moe_imbalance),
     .lo = 1,
     .hi = 1e6,
     .parse = memest_optp_after_moe,
     .expected = "a factor of at least 1 (the busiest expert's tokens over the balanced share)",
     .dflt = "1",
     .help = "tokens of the busiest expert over the balanced share",
     .doc = "1 is balanced routing: of the T·k assignments of T tokens to their top k of E "
             "experts, expert 0 gets min(T, ⌈F·T·k/E⌉) and the others share the rest evenly "
             "(`src/ops/ops_moe.c`); refused for a model without experts"},
    {.name = "torch",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "V",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(run.torch),
     .vocab = &vocab_torch,
     .help = "the PyTorch release whose autograd rules apply (2: 2.x)"},
    {.name = "transformers",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "V",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_transformers,
     .dflt = "5",
     .help = "the transformers release whose modeling code a Hugging Face config follows "
             "(4.46 to 4.57, or 5)",
     .doc = "the transformers release whose modeling code an architecture template follows "
            "(models/arch/: SDPA's `.contiguous()` copies of q, k and v from 4.48 to 4.55, "
            "`enable_gqa` instead of `repeat_kv` from 4.54 under PyTorch 2.x without a mask, "
            "ForCausalLMLoss's float32 shift copy of the logits in 4.48, the DynamicCache's "
            "references up to 4.55 and `torch.cat` copies from 4.56); refused for a model "
            "file, which follows no transformers code"},
    {.name = "loop",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "NAME",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(step.loop),
     .vocab = &vocab_loop,
     .dflt_text = "trainer for a Hugging Face config (what runs one: transformers' Trainer), "
                  "plain for a model file",
     .help = "the training loop around the model",
     .doc = "`plain`: `out = model(x); loss = loss_fn(out, y); loss.backward()`, `out` "
             "alive to the end of the step; `trainer`: transformers' Trainer (the loss "
             "inside the model from labels, the outputs dropped before backward); "
             "`torchtune`: `del logits` before backward, CEWithChunkedOutputLoss's 8 "
             "chunks each upcast alone; `torchtitan`: `del pred` before backward, "
             "`cross_entropy(pred.flatten(0, 1).float(), ...)`. torchtune and torchtitan "
             "train their own model code: a Hugging Face config's attention then repeats k "
             "and v to the query heads by a copy and calls `.contiguous()` on none of q, k, "
             "v (torchtune's `MultiHeadAttention`, torchtitan's `Attention`: no "
             "`enable_gqa`), and the RoPE table is the loop's buffer (torchtune's "
             "`cache`, torchtitan's `freqs_cis`) "
             "(doc/memory-model.md, \"The training loop\")"},
    {.name = "activation-offload",
     .group = MEMEST_GROUP_STEP,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(step.act_offload),
     .help = "torchtune's activation offloading (enable_activation_offloading)",
     .doc = "torchtune v0.6.1's `OffloadActivations` around the model's forward, its defaults "
             "(streams, `max_fwd_stash_size` 5, `min_offload_size` 1024 bytes): every saved "
             "tensor of 1 KiB or more that is no `nn.Parameter` (a linear's `weight.t()` is "
             "not one) goes to pinned host memory, its device copy freed five packs later; "
             "the backward brings each back as its node runs and frees it after the next "
             "such node; the output head's and the checkpointed blocks' saves stay (any "
             "`--loop`; torchtune's recipes run `--loop torchtune`; doc/memory-model.md, "
             "\"Activation offloading\")"},
    {.name = "weights",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "W",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .vocab = &vocab_weights,
     .parse = memest_optp_weights,
     .help = "quantised linear weights: int8, nf4, fp4 (bitsandbytes), int4 (GPTQ, or AWQ as "
             "the config says), gptq, awq, mxfp4 (gpt-oss's experts), fp8 (128x128 block "
             "scales), nvfp4 (ModelOpt); dense: the config's quantization_config set aside",
     .doc = "quantised linear weights: `int8` (bitsandbytes `Linear8bitLt`), `nf4`, `fp4` "
             "(bitsandbytes `Linear4bit`), `int4` (GPTQ's `QuantLinear`, or AWQ's when the "
             "config's `quantization_config` says `awq`), `gptq`, `awq` (`WQLinear_GEMM`), "
             "`mxfp4` (OCP MXFP4 blocks and e8m0 scales of 32, as gpt-oss's "
             "`Mxfp4GptOssExperts` keeps its experts: frozen, no autograd), `fp8` "
             "(transformers' `FP8Linear`: float8_e4m3fn weights and a float32 "
             "`weight_scale_inv` per 128 x 128 block, DeepSeek-V3's checkpoint; no autograd), `nvfp4` (NVIDIA "
             "ModelOpt's NVFP4 as vLLM loads it: e2m1 pairs, a float8 scale per 16, float32 "
             "global scales; no autograd); over the config's `quantization_config`; `dense` sets the config's aside (the weights "
             "in the model's dtype: `Mxfp4Config(dequantize=True)`, a dequantised "
             "checkpoint); refused for a model without a layer to replace"},
    {.name = "group-size",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "G",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_group_size,
     .expected = "a whole number between 1 and 2^31, or -1",
     .dflt_text = "128",
     .help = "GPTQ/AWQ scale group (-1: a whole row)",
     .doc = "over the config's; `-1`: one group per row"},
    {.name = "double-quant",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(quant.p.double_quant),
     GIVEN(quant.dq_set),
     .help = "bitsandbytes 4-bit: quantise the block scales again",
     .doc = "bitsandbytes 4-bit: quantise the block scales again "
             "(`bnb_4bit_use_double_quant`)"},
    {.name = "compute-dtype",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "T",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .vocab = &vocab_compute_dtype,
     .parse = memest_optp_compute_dtype,
     .dflt_text = "fp32",
     .help = "bitsandbytes 4-bit: bnb_4bit_compute_dtype",
     .doc = "`fp32` is transformers' default, `bf16` the QLoRA recipe's; over the config's"},
    {.name = "quant-storage",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "T",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .vocab = &vocab_quant_storage,
     .parse = memest_optp_quant_storage,
     .dflt_text = "uint8",
     .help = "bitsandbytes 4-bit: bnb_4bit_quant_storage",
     .doc = "the type the packed 4-bit weights are stored in (two values per byte either "
             "way): `uint8` is bitsandbytes' default; FSDP and ZeRO-3 QLoRA store them in "
             "the model's 16-bit type, as FSDP flattens one type per unit; over the config's"},
    {.name = "kbit-prep",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(quant.kbit_prep),
     .help = "PEFT's prepare_model_for_kbit_training: all frozen, fp16/bf16 parameters to "
             "fp32",
     .doc = "PEFT's `prepare_model_for_kbit_training` on a quantised model: every parameter "
             "frozen, the fp16/bf16 parameters of the layers left dense in float32 (not "
             "under GPTQ)"},
    {.name = "strict-config",
     .group = MEMEST_GROUP_LLM,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(strict_config),
     .help = "a Hugging Face config's unknown key is an error (exit 3), not a warning",
     .doc = "an unknown key of the config (in neither its architecture template nor the keys "
             "any config may carry, which change no memory) is an error naming the file, the "
             "key and the model_type (exit 3), not a warning after which the estimate goes on "
             "(doc/model-format.md); refused for a model file (it would change nothing)"},
    {.name = "lora",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "R",
     .group = MEMEST_GROUP_LORA,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_U64,
     .noun = "a rank",
     FIELD(lora.r),
     .lo = 1,
     .hi = (double)MEMEST_LORA_MAX_R,
     .help = "PEFT LoRA of rank R: the base frozen, adapters float32",
     .doc = "PEFT's LoRA of rank R (1 to 65536) on the target layers, as `get_peft_model()` "
             "with a `LoraConfig` (peft v0.17.1): every base parameter frozen (no gradient, "
             "no optimizer state, and a frozen linear saves no input for its weight's "
             "gradient), `lora_A` [R, in] and `lora_B` [out, R] float32 adapters after each "
             "target linear with the tensors they save, the input cast to float32, the "
             "scaling, the add and the cast back; a bitsandbytes base (`--weights "
             "int8/nf4/fp4`) runs `bnb.py`'s forward (a 4-bit result cloned, no casts under "
             "`--amp`). The report adds the line `print_trainable_parameters()` prints"},
    {.name = "lora-alpha",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "A",
     .group = MEMEST_GROUP_LORA,
     .modes = MEMEST_MODES_ALL,
     .needs = MEMEST_NEED_LORA,
     .verb = -1,
     .kind = MEMEST_K_REAL,
     FIELD(lora.alpha),
     .lo = 0,
     .hi = 1e6,
     .dflt = "8",
     .help = "lora_alpha, scaling A/R",
     .doc = "the adapters' output is scaled by A/R"},
    {.name = "lora-dropout",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "P",
     .group = MEMEST_GROUP_LORA,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING|MEMEST_NEED_LORA,
     .verb = -1,
     .kind = MEMEST_K_REAL,
     .noun = "a probability",
     FIELD(lora.dropout),
     GIVEN(lora_dropout_set),
     .lo = 0,
     .hi = 1,
     .dflt = "0",
     .help = "lora_dropout (0: no dropout)",
     .doc = "0 is PEFT's `nn.Identity`: no dropout node"},
    {.name = "lora-targets",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "LIST",
     .group = MEMEST_GROUP_LORA,
     .modes = MEMEST_MODES_ALL,
     .needs = MEMEST_NEED_LORA,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_lora_targets,
     .expected = "layer names separated by commas, or all-linear",
     .dflt_text = "PEFT's for the config's model_type",
     .help = "layer names (q_proj,v_proj) or all-linear",
     .doc = "`target_modules`: layer names separated by commas (a layer is adapted when its "
             "name is one of them or ends with `.` and one of them, as `q_proj` names "
             "`model.layers.0.self_attn.q_proj`), or `all-linear` (every linear layer but "
             "the output layer); default: PEFT's "
             "`TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING` entry for the config's "
             "`model_type` (`q_proj,v_proj` for llama, mistral, qwen2, gemma; `c_attn` for "
             "gpt2, ...). A model file without a `model_type` (or one PEFT has no entry for) "
             "needs it"},
    {.name = "lora-rslora",
     .group = MEMEST_GROUP_LORA,
     .modes = MEMEST_MODES_ALL,
     .needs = MEMEST_NEED_LORA,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(lora.rslora),
     .help = "rank-stabilised scaling A/sqrt(R)",
     .doc = "`use_rslora`: scaling A/sqrt(R)"},
    {.name = "generate",
     .group = MEMEST_GROUP_GENERATE,
     .modes = MEMEST_M(GENERATE),
     .verb = MEMEST_MODE_GENERATE,
     .kind = MEMEST_K_FLAG,
     FIELD(generate),
     .help = "text generation: prefill and decode (transformers)",
     .doc = "text generation as transformers' `generate()` runs it: the prefill over "
             "`--context` tokens and the decode steps, with the KV cache"},
    {.name = "context",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "C",
     .group = MEMEST_GROUP_GENERATE,
     .modes = MEMEST_M(GENERATE),
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(gen_context),
     .lo = 1,
     .hi = 1099511627776,
     .help = "prompt tokens (seq_len of the prefill)",
     .doc = "with `--generate`: the prompt's tokens (the model variable `seq_len` of the "
             "prefill; excludes `--seq`)"},
    {.name = "new-tokens",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "N",
     .group = MEMEST_GROUP_GENERATE,
     .modes = MEMEST_M(GENERATE),
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(gen_new_tokens),
     GIVEN(new_tokens_set),
     .lo = 1,
     .hi = 1099511627776,
     .dflt = "128",
     .help = "tokens generated"},
    {.name = "kv-dtype",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "T",
     .group = MEMEST_GROUP_GENERATE,
     .modes = MEMEST_M(GENERATE),
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(kv_dtype),
     GIVEN(kv_dtype_set),
     .vocab = &vocab_kv_dtype,
     .parse = memest_optp_after_kv_dtype,
     .dflt_text = "the model's",
     .help = "the KV cache's type",
     .doc = "the keys' own type unless given"},
    {.name = "cache",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "K",
     .group = MEMEST_GROUP_GENERATE,
     .modes = MEMEST_M(GENERATE),
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(gen_cache),
     .vocab = &vocab_cache,
     .help = "the KV cache class (DynamicCache, StaticCache)",
     .doc = "`dynamic`: transformers' `DynamicCache`; `static`: `StaticCache` "
             "(`SlidingWindowCache` on sliding-window layers)"},
    {.name = "all-logits",
     .group = MEMEST_GROUP_GENERATE,
     .modes = MEMEST_M(GENERATE),
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(all_logits),
     .help = "logits of every prompt position (else the last only)",
     .doc = "with `--generate`: the prefill's logits for every prompt position "
             "(`logits_to_keep=0`), else for the last only"},
    {.name = "max-context",
     .group = MEMEST_GROUP_GENERATE,
     .modes = MEMEST_M(GENERATE),
     .needs = MEMEST_NEED_CARD,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(max_context),
     .help = "the longest context that fits the card (without --context)",
     .doc = "with `--generate` and a card, without `--context`: the longest context (with "
             "`--new-tokens`) that fits; `--max-batch` with `--generate` gives the largest "
             "batch (without `--batch`); a search that reaches its top (2^40) or memest's "
             "limits says so on stderr"},
    {.name = "sweep-context",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "L",
     .group = MEMEST_GROUP_GENERATE,
     .modes = MEMEST_M(GENERATE),
     .verb = -1,
     .kind = MEMEST_K_STR,
     FIELD(gen_sweep),
     .parse = memest_optp_after_sweep_list,
     .expected = "a list such as 512,1024 or 512:8192:x2",
     .help = "a table of contexts (L as --sweep's LIST)",
     .doc = "with `--generate`: a table over contexts (LIST as `--sweep`'s)"},
    {.name = "kv-block",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "B",
     .group = MEMEST_GROUP_GENERATE,
     .modes = MEMEST_M(GENERATE),
     .needs = MEMEST_NEED_CARD,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(kv_block),
     .lo = 1,
     .hi = 65536,
     .help = "vLLM's paged cache with blocks of B tokens",
     .doc = "with `--generate` and a card: vLLM's paged KV cache with blocks of B tokens: "
             "the blocks and sequences that fit"},
    {.name = "gpu-util",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "U",
     .group = MEMEST_GROUP_GENERATE,
     .modes = MEMEST_M(GENERATE),
     .needs = MEMEST_NEED_KV_BLOCK,
     .verb = -1,
     .kind = MEMEST_K_REAL,
     .noun = "a fraction",
     FIELD(gpu_util),
     GIVEN(gpu_util_set),
     .lo = 0.01,
     .hi = 1,
     .dflt = "0.9",
     .help = "vLLM's gpu_memory_utilization, with --kv-block",
     .doc = "vLLM's `gpu_memory_utilization`"},
    {.name = "gpus",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "N",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(dist.gpus),
     GIVEN(dist.gpus_set),
     .lo = 1,
     .hi = 1048576,
     .help = "world size; --batch stays the micro-batch per GPU",
     .doc = "several GPUs: the world size; `--batch` stays the micro-batch per GPU, and the "
             "report gives the global batch"},
    {.name = "tp",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "T",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(dist.tp),
     .lo = 1,
     .hi = 1048576,
     .dflt = "1",
     .help = "tensor parallelism (the model's variable tp: Megatron-LM's split)",
     .doc = "tensor parallelism as Megatron-LM splits a layer: the model's variable `tp` "
             "(the llama-family templates have it)"},
    {.name = "pp",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "P",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(dist.pp),
     .lo = 1,
     .hi = 1048576,
     .dflt = "1",
     .help = "pipeline stages, each estimated; the binding one answers",
     .doc = "pipeline parallelism: the layers in P stages, every stage estimated, the "
             "binding one answering"},
    {.name = "micro-batches",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "M",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING|MEMEST_NEED_PP,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(dist.micro_batches),
     GIVEN(dist.micro_batches_set),
     .lo = 1,
     .hi = 1048576,
     .dflt_text = "P",
     .help = "micro-batches per step and pipeline, its gradient accumulation",
     .doc = "`--grad-accum` is refused with `--pp`"},
    {.name = "schedule",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "S",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING|MEMEST_NEED_PP,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(dist.schedule),
     GIVEN(dist.schedule_set),
     .vocab = &vocab_schedule,
     .help = "the pipeline schedule",
     .doc = "`interleaved` with `--virtual-stages V`, V ≥ 2"},
    {.name = "virtual-stages",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "V",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING|MEMEST_NEED_PP,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(dist.virtual_stages),
     GIVEN(dist.virtual_stages_set),
     .lo = 1,
     .hi = 1048576,
     .help = "model chunks per stage (interleaved: 2 or more)",
     .doc = "model chunks per stage of the interleaved schedule, 2 or more"},
    {.name = "cp",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "C",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(dist.cp),
     .lo = 1,
     .hi = 1048576,
     .dflt = "1",
     .help = "context parallelism: --seq / C tokens per rank",
     .doc = "context parallelism: each rank holds `--seq` / C tokens (it needs `--seq`); "
             "the gradients are reduced over DP x C"},
    {.name = "sequence-parallel",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(dist.sequence_parallel),
     .help = "Megatron-LM's sequence parallelism (with --tp)",
     .doc = "Megatron-LM's sequence parallelism with `--tp`: the model's variable `sp`"},
    {.name = "ep",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "E",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(dist.ep),
     .lo = 1,
     .hi = 1048576,
     .dflt = "1",
     .help = "expert parallelism: E-th of the MoE experts per rank",
     .doc = "expert parallelism: each rank holds E-th of the experts (the model's variable "
             "`ep`), with `--strategy ddp`"},
    {.name = "nccl-mem",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "SIZE",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_SIZE,
     FIELD(step.nccl_mem),
     GIVEN(step.nccl_set),
     .hi = (double)MEMEST_MAX_OVERHEAD,
     .dflt_text = "the rule of doc/several-gpus.md",
     .help = "NCCL's device memory per GPU",
     .doc = "NCCL's device memory per GPU, all its communicators together, in place of "
             "the rule (doc/several-gpus.md, \"NCCL's memory\"); 0 on one GPU; at most `1TiB`"},
    {.name = "gpus-per-node",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "N",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(dist.gpus_per_node),
     GIVEN(dist.gpus_per_node_set),
     .lo = 1,
     .hi = 1048576,
     .dflt_text = "--gpus up to 8",
     .help = "GPUs per node: hsdp's shard group",
     .doc = "GPUs per node (default: `--gpus` up to 8): `hsdp` shards over them and needs "
             "whole nodes (`--gpus` a multiple of N, N a multiple of TP×PP×CP); a comparison "
             "of cards counts its nodes; refused elsewhere"},
    {.name = "strategy",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "S",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(dist.strategy),
     GIVEN(dist.strategy_set),
     .vocab = &vocab_strategy,
     .dflt_text = "ddp with --gpus",
     .help = "the data-parallel engine",
     .doc = "the data-parallel engine: `ddp` (PyTorch DDP, the default with `--gpus`), "
             "`zero1`, `zero2`, `zero3` (DeepSpeed ZeRO), `fsdp` (FSDP `FULL_SHARD`), "
             "`fsdp-grad-op` (`SHARD_GRAD_OP`), `hsdp` (`HYBRID_SHARD`: sharded within a "
             "node of `--gpus-per-node`)"},
    {.name = "offload",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "W",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(dist.offload),
     .vocab = &vocab_offload,
     .help = "ZeRO-Offload / FSDP CPU offload",
     .doc = "ZeRO-Offload / ZeRO-Infinity and FSDP's CPU offload: `optimizer` (state, "
             "master weights and the gradient partition on the host) or `optimizer+params` "
             "(and the parameter shards; `zero3`, `fsdp`, `hsdp`); the report adds the host "
             "memory"},
    {.name = "deepspeed",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "F",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_STR,
     FIELD(dist.config_path),
     .expected = "a DeepSpeed config file (ds_config.json)",
     .help = "a DeepSpeed config (ds_config.json): ZeRO stage, offload, buckets, bf16/fp16, "
             "batch, accumulation",
     .doc = "the user's DeepSpeed config: `zero_optimization` (stage, `offload_optimizer`, "
             "`offload_param`, the bucket sizes, `overlap_comm`, `contiguous_gradients`, the "
             "`stage3_*` settings, `sub_group_size`), `bf16`/`fp16`, "
             "`train_micro_batch_size_per_gpu`, "
             "`gradient_accumulation_steps`, `optimizer.type`; the command line's options "
             "win; keys that change no memory are ignored with a note, keys that change "
             "memory in ways memest does not model are errors (exit 3)"},
    {.name = "fsdp-config",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "F",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_STR,
     FIELD(dist.fsdp_path),
     .expected = "an accelerate config (YAML) or fsdp_config JSON",
     .help = "an accelerate FSDP config (YAML) or the Trainer's fsdp_config JSON",
     .doc = "the user's FSDP config: an accelerate config (the YAML `accelerate config` "
             "writes: `distributed_type`, `num_processes`, `num_machines`, "
             "`mixed_precision`, `fsdp_config` with the sharding strategy, "
             "`TRANSFORMER_BASED_WRAP` by `fsdp_transformer_layer_cls_to_wrap`, "
             "`fsdp_offload_params`, the prefetches, `fsdp_activation_checkpointing`) or the "
             "Trainer's `fsdp_config` JSON (the same keys without `fsdp_`); options on the "
             "command line win; as `--deepspeed`, keys that change no memory are noted, "
             "others memest does not model (a size-based wrap policy, `HYBRID_SHARD_ZERO2`) "
             "and unknown keys are errors (exit 3); `fsdp_version: 2` is `--fsdp2`"},
    {.name = "fsdp-wrap",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "B",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_STR,
     FIELD(dist.eng.wrap_block),
     .expected = "a block name (the transformer layer class)",
     .dflt_text = "the top-level block instances",
     .help = "FSDP's auto-wrap block",
     .doc = "FSDP's auto-wrap policy: every instance of block B (the transformer layer "
             "class, e.g. `LlamaDecoderLayer`) is a unit; default: the top-level block "
             "instances"},
    {.name = "fsdp-policy",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "P",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_VOCAB,
     FIELD(dist.eng.policy),
     .vocab = &vocab_fsdp_policy,
     .dflt_text = "peft with --lora (what the Trainer sets for a PEFT model), else layers",
     .help = "FSDP's auto-wrap policy",
     .doc = "FSDP's auto-wrap policy: `layers` (transformer_auto_wrap_policy: the layer "
             "block's instances, `--fsdp-wrap`) or `peft` (PEFT's fsdp_auto_wrap_policy: "
             "those, and every leaf module with a trainable weight, each LoRA adapter, a "
             "unit of its own; transformers' Trainer sets it for a LoRA model); a unit "
             "holding trainable and frozen parameters needs `--fsdp-orig-params`"},
    {.name = "fsdp-orig-params",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(dist.eng.use_orig_params),
     .help = "FSDP's use_orig_params=True",
     .doc = "FSDP's `use_orig_params=True` (an FSDP config's `use_orig_params`): a unit may "
             "mix trainable and frozen parameters; its shard's gradient is whole, the "
             "optimizer's state covers the trainable parameters' parts of it, and each "
             "parameter starts 16-byte aligned in the FlatParameter"},
    {.name = "fsdp2",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(dist.eng.fsdp2),
     .help = "FSDP2 (fully_shard): each parameter sharded on its own",
     .doc = "FSDP2, `fully_shard` (torchtitan's, torchtune's, accelerate's `fsdp_version: 2`): "
             "each parameter a DTensor chunked on dim 0 over the shard group, padded to "
             "ceil(dim0 / N) rows on every rank; gradients and optimizer state only for the "
             "parameters that require grad; a unit may mix types and frozen parameters; the "
             "units are the layers (`--fsdp-policy layers` by default)"},
    {.name = "fsdp-no-mixed-precision",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(dist.eng.no_mixed_precision),
     .help = "pure 16-bit FSDP: no fp32 master shards",
     .doc = "FSDP without MixedPrecision (accelerate's `mixed_precision: no`) over a model "
             "loaded in the 16-bit `--dtype`: the shards, gradients and optimizer state stay "
             "16-bit (8 bytes per parameter with Adam); by default a 16-bit `--dtype` under "
             "FSDP means mixed precision, which upcasts every unit that requires grad to an "
             "fp32 master shard (accelerate's prepare_model)"},
    {.name = "ddp-bucket-view",
     .group = MEMEST_GROUP_DIST,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(dist.eng.ddp_grad_as_bucket_view),
     .help = "DDP's gradient_as_bucket_view=True (no bucket copies)",
     .doc = "DDP's `gradient_as_bucket_view=True`: the gradients are views into the "
             "buckets, no second copy"},
    {.name = "gpu",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "NAME",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_gpu,
     .expected = "a GPU name (see --list-gpus) or auto",
     .help = "target card (--list-gpus), or auto with --probe; all, or a list such as "
             "t4,l4,a100-80gb, compares the cards",
     .doc = "the target card, a preset (`--list-gpus`); `--gpu auto` with `--probe`: the "
             "probed device; `--gpu all` or a list (`t4,l4,a100-80gb`): the cards compared"},
    {.name = "gpus-file",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "F.json",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_ALL,
     .needs = MEMEST_NEED_GPU,
     .verb = -1,
     .kind = MEMEST_K_STR,
     FIELD(gpus_file),
     .expected = "a file name",
     .dflt_text = "$XDG_CONFIG_HOME/memest/gpus.json if present",
     .help = "your GPU presets (models/gpus.json's format), added to the built-in ones",
     .doc = "your GPU presets, in the format of `models/gpus.json` (at most 1 MiB), added to "
             "the built-in ones for `--gpu`, `--probe --gpu auto`, `--gpu all` and "
             "`--list-gpus`; a preset with a built-in one's name or alias replaces it. Without "
             "it, `$XDG_CONFIG_HOME/memest/gpus.json` (else `~/.config/memest/gpus.json`) is "
             "read when it exists (doc/cards-and-fit.md, \"Your own presets\")"},
    {.name = "price",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "C=P",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_M(COMPARE),
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_prices,
     .help = "your price per hour of card C (repeatable, or C=P,C=P): the comparison adds "
             "samples per unit of price",
     .doc = "your price per hour of one card C, repeatable or a list "
             "(`h100-80gb=2.5,l4=0.8`): a comparison of cards adds samples per unit of price"},
    {.name = "mem",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "SIZE",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_SIZE,
     FIELD(mem),
     GIVEN(mem_set),
     .lo = 1,
     .help = "target memory, e.g. 24GiB, 16GB, 500MiB",
     .doc = "the target card's memory for any other card: `24GiB`, `500MiB`, `24GB`, plain "
             "bytes"},
    {.name = "overhead",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "SIZE",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_SIZE,
     FIELD(step.overhead),
     GIVEN(step.overhead_set),
     .hi = (double)MEMEST_MAX_OVERHEAD,
     .dflt_fn = default_overhead,
     .help = "the CUDA context's size",
     .doc = "at most `1TiB`"},
    {.name = "fit",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_M(FIT) | MEMEST_M(ADVISE),
     .needs = MEMEST_NEED_CARD,
     .verb = MEMEST_MODE_FIT,
     .kind = MEMEST_K_FLAG,
     FIELD(fit),
     .help = "one-line verdict; exit 1 if it does not fit",
     .doc = "one-line verdict; exit 1 if the step does not fit the card with the headroom"},
    {.name = "headroom",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "P",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_ALL,
     .needs = MEMEST_NEED_CARD,
     .verb = -1,
     .kind = MEMEST_K_REAL,
     FIELD(headroom),
     GIVEN(headroom_set),
     .lo = 0,
     .hi = 99,
     .noun = "a percentage",
     .dflt = "5",
     .help = "percent of the card to keep free"},
    {.name = "used",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "SIZE",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_ALL,
     .needs = MEMEST_NEED_CARD,
     .verb = -1,
     .kind = MEMEST_K_SIZE,
     FIELD(used),
     GIVEN(used_set),
     .lo = 1,
     .help = "the card's memory other processes use, e.g. 2GiB",
     .doc = "device memory that other processes (or this one, outside PyTorch's allocator: "
             "NCCL, another framework) hold on the card, as nvidia-smi shows it: the step "
             "has the card less the headroom, less this, less the CUDA context"},
    {.name = "memory-fraction",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "F",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_ALL,
     .needs = MEMEST_NEED_CARD,
     .verb = -1,
     .kind = MEMEST_K_REAL,
     FIELD(memory_fraction),
     GIVEN(memory_fraction_set),
     .lo = 1e-6,
     .hi = 1,
     .noun = "a fraction of the card's memory",
     .help = "the job's torch.cuda.set_per_process_memory_fraction(F)",
     .doc = "the job calls `torch.cuda.set_per_process_memory_fraction(F)`: the caching "
             "allocator may hold at most F times the card's memory (`allowed_memory_maximum`), "
             "checked before each segment with the segment's size, and "
             "`garbage_collection_threshold` applies; the card's own limit (its memory less "
             "the headroom, `--used` and the context) still holds. The least memory is then "
             "the fraction's: the allowed bytes the step runs in"},
    {.name = "alloc-conf",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "STR",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_STR,
     FIELD(alloc_conf),
     GIVEN(alloc_conf_set),
     .help = "PYTORCH_CUDA_ALLOC_CONF's settings (default: the environment's)",
     .doc = "the caching allocator's settings, as `PYTORCH_CUDA_ALLOC_CONF` gives them to "
             "PyTorch 2.6 and parsed as it parses them (`expandable_segments:True`, "
             "`max_split_size_mb:N`, `max_non_split_rounding_mb:N`, "
             "`roundup_power2_divisions:N` or `[MB:N,...,>:N]`, "
             "`garbage_collection_threshold:F`; `backend:native`, "
             "`release_lock_on_cudamalloc`, `pinned_*` change no device memory; "
             "`backend:cudaMallocAsync` and unknown keys are refused); without it, the "
             "environment's `PYTORCH_CUDA_ALLOC_CONF` (`--alloc-conf backend:native`: the "
             "defaults whatever it says). The report names the settings that applied (doc/cards-and-fit.md, \"Under memory "
             "pressure\")"},
    {.name = "max-batch",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_M(MAX_BATCH)|MEMEST_M(GENERATE),
     .needs = MEMEST_NEED_CARD,
     .verb = MEMEST_MODE_MAX_BATCH,
     .kind = MEMEST_K_FLAG,
     FIELD(max_batch),
     .help = "the largest batch that fits (with --generate too)",
     .doc = "the largest batch that fits the card (`--batch` is refused: it is what is "
             "searched; a search up to 2^53−1 that fits says so)"},
    {.name = "sweep",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "LIST",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_M(SWEEP),
     .verb = MEMEST_MODE_SWEEP,
     .kind = MEMEST_K_STR,
     FIELD(sweep),
     .parse = memest_optp_after_sweep_list,
     .expected = "a list such as 1,2,8 or 1:1024:x2",
     .help = "batch sizes: 1,2,8 or START:END:xK or START:END:+K",
     .doc = "a table of batch sizes: `1,2,8,32`, `START:END:xK` or `START:END:+K` "
             "(`--batch` is refused)"},
    {.name = "sweep-var",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "N=LIST",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_M(SWEEP),
     .verb = MEMEST_MODE_SWEEP,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_sweep_var,
     .help = "sweep model variable N instead of the batch",
     .doc = "sweep a model variable (e.g. `seq_len=128:1024:x2`) instead of the batch"},
    {.name = "mfu",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "F",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_ALL,
     .needs = MEMEST_NEED_PRESET,
     .verb = -1,
     .kind = MEMEST_K_REAL,
     FIELD(mfu),
     GIVEN(mfu_set),
     .lo = 0.001,
     .hi = 1,
     .noun = "a fraction",
     .dflt = "0.4",
     .help = "assumed fraction of peak FLOP/s for the time estimates of --gpu"},
    {.name = "offload-bw",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "B",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_PRESET | MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_REAL,
     FIELD(offload_bw),
     GIVEN(offload_bw_set),
     .lo = 1e6,
     .hi = 1e13,
     .noun = "bytes per second",
     .dflt = "25e9",
     .help = "the host link's bytes/s, for the time of --offload and --activation-offload",
     .doc = "the bytes a second an offload moves between the GPU and the host, for the "
             "step time under `--offload` and `--activation-offload` (the backward waits for "
             "each copy back; the forward's copies out overlap its compute): an assumed 25e9, what pinned copies reach over "
             "PCIe 4.0 x16 (32 GB/s a direction nominal); give the measured figure "
             "(CUDA's bandwidthTest) for yours"},
    {.name = "cpu-optim-rate",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "P",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_MODES_STEP,
     .needs = MEMEST_NEED_PRESET | MEMEST_NEED_TRAINING,
     .verb = -1,
     .kind = MEMEST_K_REAL,
     FIELD(cpu_optim_rate),
     GIVEN(cpu_optim_rate_set),
     .lo = 1e3,
     .hi = 1e13,
     .noun = "parameters per second",
     .dflt = "1e9",
     .help = "CPU optimizer updates/s per rank, for the time of --offload",
     .doc = "the parameters a second the host's optimizer (DeepSpeed's CPU Adam) updates "
             "for one rank, for the step time under `--offload`: an assumed 1e9; time "
             "one step of yours and give the figure"},
    {.name = "advise",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_M(ADVISE),
     .needs = MEMEST_NEED_CARD,
     .verb = MEMEST_MODE_ADVISE,
     .kind = MEMEST_K_FLAG,
     FIELD(advise),
     .help = "ways to save memory, with their figures",
     .doc = "ways to save memory, each with the figure memest computes for it"},
    {.name = "probe",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_M(ESTIMATE)|MEMEST_M(FIT),
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(probe),
     .help = "check the prediction on a real CUDA device",
     .doc = "replay the predicted step on a real CUDA device (`--device` only with "
             "`--probe`)"},
    {.name = "device",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "N",
     .group = MEMEST_GROUP_CARD,
     .modes = MEMEST_M(ESTIMATE)|MEMEST_M(FIT),
     .needs = MEMEST_NEED_PROBE,
     .verb = -1,
     .kind = MEMEST_K_U64,
     FIELD(device),
     GIVEN(device_set),
     .lo = 0,
     .hi = 1023,
     .noun = "a device number",
     .dflt = "0",
     .help = "CUDA device for --probe"},
    {.name = "layers",
     .group = MEMEST_GROUP_OUTPUT,
     .modes = MEMEST_M(ESTIMATE)|MEMEST_M(MAX_BATCH)|MEMEST_M(FIT),
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(layers),
     .help = "add a per-layer table",
     .doc = "add a per-layer table: name, type, output shape, parameters, saved bytes, "
             "forward MACs, then the loss's row (`loss`: its input's shape and dtype, where "
             "the classes are, its target's shape and dtype; in `--json`, the last entry of "
             "`layers` with `input_shape`, `input_dtype`, `class_dim`, `target_shape`, "
             "`target_dtype`, `output_shape`); to one estimate's report or `--max-batch`'s, "
             "refused with sweeps and `--advise`, and with `--fit` unless `--json` (whose "
             "document always has `layers`; the loss's entry only with `--layers`)"},
    {.name = "json",
     .group = MEMEST_GROUP_OUTPUT,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_CUSTOM,
     .parse = memest_optp_json,
     .help = "machine-readable output (doc/json-output.md)",
     .doc = "machine-readable output"},
    {.name = "csv",
     .group = MEMEST_GROUP_OUTPUT,
     .modes = MEMEST_M(SWEEP)|MEMEST_M(COMPARE),
     .verb = -1,
     .kind = MEMEST_K_FLAG,
     FIELD(csv),
     .help = "CSV output for sweeps and card comparisons"},
    {.name = "timeline",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "F.csv",
     .group = MEMEST_GROUP_OUTPUT,
     .modes = MEMEST_M(ESTIMATE)|MEMEST_M(MAX_BATCH)|MEMEST_M(FIT),
     .verb = -1,
     .kind = MEMEST_K_STR,
     FIELD(timeline_path),
     .expected = "a file name",
     .help = "the step's allocation events (--pp: every stage's beside it)",
     .doc = "the step's allocation events, one row each; with one estimate or `--max-batch` "
             "(the step at the batch found), refused with sweeps and `--advise`; with "
             "`--pp`, every stage's file beside it, `F-stage<s>.csv`"},
    {.name = "plot",
     .arg = MEMEST_ARG_REQUIRED,
     .metavar = "F.svg",
     .group = MEMEST_GROUP_OUTPUT,
     .modes = MEMEST_M(ESTIMATE)|MEMEST_M(MAX_BATCH)|MEMEST_M(FIT),
     .verb = -1,
     .kind = MEMEST_K_STR,
     FIELD(plot_path),
     .expected = "a file name",
     .help = "a plot of the step's memory over time (--pp: every stage's too)",
     .doc = "a picture of the memory over the step, stacked by category, with the peak; as "
             "`--timeline` (`F-stage<s>.svg`)"},
    {.name = "list-ops",
     .group = MEMEST_GROUP_OUTPUT,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_ACTION,
     FIELD(list_ops),
     .help = "the supported layer types (Markdown)"},
    {.name = "list-gpus",
     .group = MEMEST_GROUP_OUTPUT,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_ACTION,
     FIELD(list_gpus),
     .help = "the GPU presets"},
    {.name = "help",
     .shrt = 'h',
     .group = MEMEST_GROUP_OUTPUT,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_ACTION,
     FIELD(help),
     .help = "this help; --help GROUP or --help all for the options"},
    {.name = "version",
     .group = MEMEST_GROUP_OUTPUT,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_ACTION,
     FIELD(version),
     .help = "the version"},
    {.name = "dump-options",
     .group = MEMEST_GROUP_OUTPUT,
     .modes = MEMEST_MODES_ALL,
     .verb = -1,
     .kind = MEMEST_K_ACTION,
     FIELD(dump_options),
     .help = "the option table as JSON (for the man page and completions)"},

};
const size_t memest_nopts = sizeof memest_opts / sizeof *memest_opts;

const struct memest_opt *memest_opt_find(const char *name)
{
    for (size_t i = 0; i < memest_nopts; i++)
        if (strcmp(memest_opts[i].name, name) == 0)
            return &memest_opts[i];
    return NULL;
}
