/* usage.c - the --help screen. Every list of values on it is read from the
 * table the parser checks against: step.h's optimizers, implementations,
 * zero_grad modes, autocast types and losses, dtype.h's types, the default
 * overhead (cuda_overhead.h) and the exit codes (error.h); a name added to a
 * table appears here. tests/unit/test_help.c checks this screen and
 * README.md's Options table against the same tables, and that every line
 * fits a terminal. */
#include "memest/cli.h"

#include <assert.h>
#include <stdarg.h>
#include <string.h>

#include "memest/cuda_overhead.h"
#include "memest/format.h"

enum {
    WIDTH = 80,  /* a usage screen: no line is longer */
    COLUMN = 25, /* where an option's description starts */
};

/* One entry's text, built up before it is wrapped. The entries are a few
 * hundred characters; a longer one is cut short, never overrun. */
struct text {
    char s[1024];
    size_t n;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->s + t->n, sizeof t->s - t->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        t->n = t->n + (size_t)k < sizeof t->s ? t->n + (size_t)k : sizeof t->s - 1;
}

/* names[0..n) joined by ", ", the one at index dflt (-1: none) followed by
 * note, e.g. "sgd, adam (default), adamw". */
static void add_list(struct text *t, const char *const *names, int n, int dflt, const char *note)
{
    for (int i = 0; i < n; i++)
        add(t, "%s%s%s%s", i ? ", " : "", names[i], i == dflt ? " " : "", i == dflt ? note : "");
}

/* The words of text, written from column col on and wrapped before WIDTH;
 * a continuation line starts at column indent. A number stays with the word
 * after it ("6 an output"), so that no line starts with a lone word that
 * reads as the start of an item. */
static void wrap(FILE *f, int col, int indent, const char *text)
{
    bool first = true; /* the first word of the entry: no space before it */
    for (const char *p = text; *p;) {
        p += strspn(p, " ");
        int len = (int)strcspn(p, " ");
        if (len == 0)
            break;
        if ((int)strspn(p, "0123456789") == len && p[len] == ' ' && p[len + 1] != ' ' &&
            p[len + 1])
            len += 1 + (int)strcspn(p + len + 1, " ");
        if (!first && col + 1 + len > WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (!first) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", len, p);
        col += len;
        p += len;
        first = false;
    }
    fputc('\n', f);
}

/* An option's entry: its flags, then its description in the column (one
 * space after flags that reach it). */
static void option(FILE *f, const char *flags, const struct text *t)
{
    int col = (int)strlen(flags);
    int pad = col < COLUMN ? COLUMN - col : 1;
    fprintf(f, "%s%*s", flags, pad, "");
    wrap(f, col + pad, COLUMN, t->s);
}

/* An option whose description is fixed text. */
static void fixed(FILE *f, const char *flags, const char *desc)
{
    struct text t = {0};
    add(&t, "%s", desc);
    option(f, flags, &t);
}

/* The most values a vocabulary on this screen has room for. */
#define MAX_NAMES 16
static_assert(MEMEST_OPT_COUNT <= MAX_NAMES && MEMEST_IMPL_COUNT <= MAX_NAMES &&
                  MEMEST_ATTN_COUNT <= MAX_NAMES && MEMEST_FUSED_COUNT <= MAX_NAMES &&
                  MEMEST_ZERO_GRAD_COUNT <= MAX_NAMES && MEMEST_AMP_COUNT <= MAX_NAMES &&
                  MEMEST_LOSS_COUNT <= MAX_NAMES && MEMEST_DTYPE_COUNT <= MAX_NAMES,
              "room for every vocabulary's names");

/* Sets n to the number of a vocabulary's values first..count-1 and
 * names[0..n) to their names (name() takes the value's enum). */
#define NAMES(n, names, name, first, count)                                   \
    do {                                                                      \
        (n) = 0;                                                              \
        for (int k_ = (first); k_ < (count); k_++)                            \
            (names)[(n)++] = name(k_);                                        \
    } while (0)

static void step_options(FILE *f)
{
    struct memest_step_cfg d; /* the defaults the parser starts from */
    memest_step_cfg_default(&d);
    const char *names[MAX_NAMES];
    struct text t = {0};
    int n;

    fixed(f, "  -b, --batch N", "batch size (default 1)");
    NAMES(n, names, memest_optim_name, 0, MEMEST_OPT_COUNT);
    add_list(&t, names, n, (int)d.optim.kind, "(default)");
    option(f, "  -o, --optim NAME", &t);
    fixed(f, "      --momentum M", "momentum for sgd and rmsprop (default 0)");
    fixed(f, "      --amsgrad", "adam/adamw with amsgrad (one more state copy)");
    fixed(f, "      --centered", "centered rmsprop (one more state copy)");
    t = (struct text){0};
    add(&t, "the optimizer's implementation: ");
    NAMES(n, names, memest_optim_impl_name, 0, MEMEST_IMPL_COUNT);
    add_list(&t, names, n, (int)d.impl, "(default)");
    option(f, "      --optim-impl I", &t);
    fixed(f, "      --first-step", "the first step: optimizer state is created during it");
    t = (struct text){0};
    NAMES(n, names, memest_zero_grad_name, 0, MEMEST_ZERO_GRAD_COUNT);
    static const char *const notes[MEMEST_ZERO_GRAD_COUNT] = {
        [MEMEST_ZERO_GRAD_NONE] = "set_to_none, gradients born in backward",
        [MEMEST_ZERO_GRAD_ZEROS] = "gradients persist",
    };
    int zdflt = d.zero_grad_zeros ? MEMEST_ZERO_GRAD_ZEROS : MEMEST_ZERO_GRAD_NONE;
    for (int i = 0; i < n; i++)
        add(&t, "%s%s (%s%s)", i ? ", " : "", names[i], i == zdflt ? "default: " : "", notes[i]);
    option(f, "      --zero-grad MODE", &t);
    t = (struct text){0};
    add(&t, "parameter and activation type: ");
    n = 0;
    int tdflt = -1;
    for (int k = 0; k < MEMEST_DTYPE_COUNT; k++) {
        if (!memest_dtype_is_float(k) || k == MEMEST_F64)
            continue; /* what the parser takes */
        if (k == MEMEST_F32) /* memest_cli_parse's default */
            tdflt = n;
        names[n++] = memest_dtype_name(k);
    }
    add_list(&t, names, n, tdflt, "(default)");
    option(f, "      --dtype T", &t);
    t = (struct text){0};
    add(&t, "autocast mixed precision: ");
    /* from 1: no autocast is the absence of --amp, not a value of it */
    NAMES(n, names, memest_amp_name, MEMEST_AMP_NONE + 1, MEMEST_AMP_COUNT);
    add_list(&t, names, n, -1, "");
    option(f, "      --amp T", &t);
    fixed(f, "      --grad-accum N", "accumulate N micro-batches of --batch per step");
    fixed(f, "      --checkpoint[=B,..]", "activation checkpointing: every block, or blocks B");
    t = (struct text){0};
    NAMES(n, names, memest_loss_name, 0, MEMEST_LOSS_COUNT);
    add_list(&t, names, n, (int)d.loss, "(default, or the model file's \"loss\")");
    option(f, "      --loss NAME", &t);
    fixed(f, "      --inference", "report the no-grad forward pass instead");
    fixed(f, "      --set NAME=VAL", "override a model variable (repeatable, once per variable; tp, sp "
                                     "and ep are --tp's, --sequence-parallel's and --ep's)");
}

static void llm_options(FILE *f)
{
    const char *names[MAX_NAMES];
    struct text t = {0};
    int n;

    fixed(f, "      --seq N", "sequence length: the model variable seq_len");
    add(&t, "the kernel of scaled_dot_product_attention: ");
    NAMES(n, names, memest_attention_name, 0, MEMEST_ATTN_COUNT);
    add_list(&t, names, n, MEMEST_ATTN_AUTO, "(default: as transformers' sdpa and PyTorch pick)");
    option(f, "      --attention K", &t);
    t = (struct text){0};
    add(&t, "fused kernels, a list of ");
    NAMES(n, names, memest_fused_name, 0, MEMEST_FUSED_COUNT);
    add_list(&t, names, n, -1, "");
    add(&t, "; all or none (default)");
    option(f, "      --fused LIST", &t);
    fixed(f, "      --moe-imbalance F",
          "tokens of the busiest expert over the balanced share (default 1)");
    fixed(f, "      --torch V", "PyTorch's rules: 2 (default, 2.x) or 1.13");
    fixed(f, "      --weights W",
          "quantised linear weights: int8, nf4, fp4 (bitsandbytes), int4 (GPTQ, or AWQ as the "
          "config says), gptq, awq");
    fixed(f, "      --group-size G", "GPTQ/AWQ scale group (default 128; -1: a whole row)");
    fixed(f, "      --double-quant", "bitsandbytes 4-bit: quantise the block scales again");
    fixed(f, "      --compute-dtype T", "bitsandbytes 4-bit: bnb_4bit_compute_dtype, fp32 (default), "
                                       "fp16, bf16");
    fixed(f, "      --kbit-prep",
          "PEFT's prepare_model_for_kbit_training: all frozen, fp16/bf16 parameters to fp32");
}

/* LoRA (lora.h): PEFT's LoraConfig defaults */
static void lora_options(FILE *f)
{
    struct text t = {0};
    add(&t, "PEFT LoRA of rank R (1 to %d): the base frozen, adapters float32",
        MEMEST_LORA_MAX_R);
    option(f, "      --lora R", &t);
    fixed(f, "      --lora-alpha A", "lora_alpha, scaling A/R (default 8)");
    fixed(f, "      --lora-dropout P", "lora_dropout (default 0: no dropout)");
    fixed(f, "      --lora-targets LIST",
          "layer names (q_proj,v_proj) or all-linear; default: PEFT's for the "
          "config's model_type");
    fixed(f, "      --lora-rslora", "rank-stabilised scaling A/sqrt(R)");
}

/* --generate and its options (README's "Fine-tuning and serving"). */
static void generate_options(FILE *f)
{
    fixed(f, "      --generate", "text generation: prefill and decode (transformers)");
    fixed(f, "      --context C", "prompt tokens (seq_len of the prefill)");
    fixed(f, "      --new-tokens N", "tokens generated (default 128)");
    fixed(f, "      --kv-dtype T", "the KV cache's type: fp16, bf16, fp8, int8 (default: the model's)");
    fixed(f, "      --cache K", "dynamic (default, DynamicCache) or static (StaticCache)");
    fixed(f, "      --all-logits", "logits of every prompt position (else the last only)");
    fixed(f, "      --max-context", "the longest context that fits the card (without --context)");
    fixed(f, "      --sweep-context L", "a table of contexts (L as --sweep's LIST)");
    fixed(f, "      --kv-block B", "vLLM's paged cache with blocks of B tokens");
    fixed(f, "      --gpu-util U", "vLLM's gpu_memory_utilization, with --kv-block (default 0.9)");
}

/* Several GPUs (dist.h, README's "Several GPUs"). */
static void dist_options(FILE *f)
{
    struct text t = {0};
    char names[160];
    size_t k = 0;
    names[0] = 0;
    for (int s = MEMEST_STRAT_DDP; s < MEMEST_STRAT_COUNT; s++)
        k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", s > MEMEST_STRAT_DDP ? ", " : "",
                              memest_strategy_name((enum memest_strategy)s));
    fixed(f, "      --gpus N", "world size; --batch stays the micro-batch per GPU");
    fixed(f, "      --tp T", "tensor parallelism (the model's variable tp: Megatron-LM's split)");
    fixed(f, "      --pp P", "pipeline stages, each estimated; the binding one answers");
    fixed(f, "      --micro-batches M", "micro-batches per step and pipeline (default P), its gradient "
                                        "accumulation");
    fixed(f, "      --schedule S", "1f1b (default) or interleaved");
    fixed(f, "      --virtual-stages V", "model chunks per stage (interleaved: 2 or more)");
    fixed(f, "      --cp C", "context parallelism: --seq / C tokens per rank");
    fixed(f, "      --sequence-parallel", "Megatron-LM's sequence parallelism (with --tp)");
    fixed(f, "      --ep E", "expert parallelism: E-th of the MoE experts per rank");
    fixed(f, "      --gpus-per-node N", "GPUs per node (default: N up to 8): hsdp's shard group");
    add(&t, "the data-parallel engine: %s (default ddp)", names);
    option(f, "      --strategy S", &t);
    fixed(f, "      --offload W", "ZeRO-Offload / FSDP CPU offload: optimizer or optimizer+params");
    fixed(f, "      --deepspeed F", "a DeepSpeed config (ds_config.json): ZeRO stage, offload, "
                                    "buckets, bf16/fp16, batch, accumulation");
    fixed(f, "      --fsdp-config F", "an accelerate FSDP config (YAML) or the Trainer's fsdp_config "
                                      "JSON");
    fixed(f, "      --fsdp-wrap B", "FSDP's auto-wrap block (default: the top-level block instances)");
    fixed(f, "      --ddp-bucket-view", "DDP's gradient_as_bucket_view=True (no bucket copies)");
}

static void card_options(FILE *f)
{
    char dflt[32], max[32]; /* "426", MiB as README.md writes it; "1 TiB" */
    memest_fmt_double((double)memest_default_overhead(0) / 1048576.0, dflt, sizeof dflt);
    memest_fmt_iec(MEMEST_MAX_OVERHEAD, 0, max, sizeof max);
    struct text t = {0};

    fixed(f, "      --gpu NAME", "target card (--list-gpus), or auto with --probe; all, or a "
                                 "list such as t4,l4,a100-80gb, compares the cards");
    fixed(f, "      --price C=P", "your price per hour of card C (repeatable, or C=P,C=P): the "
                                  "comparison adds samples per unit of price");
    fixed(f, "      --mem SIZE", "target memory, e.g. 24GiB, 16GB, 500MiB");
    /* one default for every card (cuda_overhead.c: no per-generation
     * figure is published) */
    add(&t, "the CUDA context's size, up to %s (default %s MiB)", max, dflt);
    option(f, "      --overhead SIZE", &t);
    fixed(f, "      --fit", "one-line verdict; exit 1 if it does not fit");
    fixed(f, "      --headroom P", "percent of the card to keep free, with a card (default 5)");
    fixed(f, "      --max-batch", "the largest batch that fits (with --generate too)");
    fixed(f, "      --sweep LIST", "batch sizes: 1,2,8 or START:END:xK or START:END:+K");
    fixed(f, "      --sweep-var N=LIST", "sweep model variable N instead of the batch");
    fixed(f, "      --mfu F",
          "assumed fraction of peak FLOP/s for the time estimates of --gpu (default 0.4)");
    fixed(f, "      --advise", "ways to save memory, with their figures");
    fixed(f, "      --probe", "check the prediction on a real CUDA device");
    fixed(f, "      --device N", "CUDA device for --probe (default 0)");
}

static void output_options(FILE *f)
{
    fixed(f, "      --layers", "add a per-layer table");
    fixed(f, "      --json", "machine-readable output (see README.md)");
    fixed(f, "      --csv", "CSV output for sweeps");
    fixed(f, "      --timeline F.csv", "the step's allocation events (--pp: every stage's beside it)");
    fixed(f, "      --plot F.svg", "a plot of the step's memory over time (--pp: every stage's too)");
    fixed(f, "      --list-ops", "the supported layer types (Markdown)");
    fixed(f, "      --list-gpus", "the GPU presets");
    fixed(f, "  -h, --help", "this help");
    fixed(f, "      --version", "the version");
}

/* "Exit codes: 0 success (and fits); 1 does not fit (...); ...", from
 * error.h's table, in the form README.md's paragraph has. */
static void exit_codes(FILE *f)
{
    struct text t = {0};
    add(&t, "Exit codes:");
    for (int c = 0; c < MEMEST_EXIT_COUNT; c++) {
        const struct memest_exit_doc *d = memest_exit_doc(c);
        add(&t, " %d %s", c, d->meaning);
        if (d->detail[0])
            add(&t, " (%s)", d->detail);
        add(&t, "%s", c + 1 < MEMEST_EXIT_COUNT ? ";" : ".");
    }
    wrap(f, 0, 0, t.s);
}

void memest_cli_usage(FILE *f)
{
    fputs("Usage: memest [options] MODEL.json\n"
          "\n"
          "Estimates the GPU memory and FLOPs of training (and inference) of the model\n"
          "described in MODEL.json (format: models/README.md).\n"
          "\n"
          "The step:\n",
          f);
    step_options(f);
    fputs("\nLLMs (Hugging Face config.json, models/arch/):\n", f);
    llm_options(f);
    fputs("\nFine-tuning:\n", f);
    lora_options(f);
    fputs("\nGeneration and serving:\n", f);
    generate_options(f);
    fputs("\nSeveral GPUs:\n", f);
    dist_options(f);
    fputs("\nThe card:\n", f);
    card_options(f);
    fputs("\nOutput:\n", f);
    output_options(f);
    fputs("\n"
          "Examples:\n"
          "  memest models/resnet50.json --batch 32 --optim adam\n"
          "  memest models/gpt2.json --batch 8 --set seq_len=512 --layers\n"
          "  memest models/resnet50.json --gpu a100-40gb --fit\n"
          "  memest models/bert-base.json --sweep 1:1024:x2 --csv\n"
          "  memest models/hf/llama-3-8b.json --generate --context 4096 --gpu a100-80gb\n"
          "\n"
          "Numbers are decimal (no hex, inf, nan or spaces): whole numbers are digits only,\n"
          "reals may have a fraction and an exponent (0.9, 1e-3), --set values a '-' sign.\n"
          "\n",
          f);
    exit_codes(f);
}
