/* step.c - the step vocabulary (step.h): the names of the optimizer
 * implementations, autocast, zero_grad and the losses, each a table pinned
 * to its enum's count, and the step configuration's defaults and checks.
 * The optimizers' names are their table's (optim.c). */
#include "memest/step.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "memest/dist.h"
#include "memest/optim.h"
#include "memest/run.h"

/* ---- torchtitan's activation checkpointing ---- */

const char *memest_ckpt_policy_name(uint8_t p)
{
    return p == MEMEST_CKPT_TORCHTITAN_OP ? "torchtitan-op" : "full";
}

bool memest_ckpt_selects(const struct memest_step_cfg *c, uint32_t i)
{
    return c->checkpoint_every <= 1 || ((uint64_t)i + 1) % c->checkpoint_every == 0;
}

bool memest_ckpt_nonreentrant(const struct memest_step_cfg *c)
{
    return c->loop == MEMEST_LOOP_TORCHTITAN || c->loop == MEMEST_LOOP_TORCHTUNE ||
           c->checkpoint_policy == MEMEST_CKPT_TORCHTITAN_OP;
}

bool memest_ckpt_early_stop(const struct memest_step_cfg *c)
{
    if (c->checkpoint_early_stop != MEMEST_EARLY_STOP_DEFAULT)
        return c->checkpoint_early_stop == MEMEST_EARLY_STOP_ON && memest_ckpt_nonreentrant(c);
    return c->loop == MEMEST_LOOP_TORCHTUNE;
}

bool memest_ckpt_keeps(const struct memest_step_cfg *c, uint8_t sac_op, uint32_t *mm)
{
    if (c->checkpoint_policy != MEMEST_CKPT_TORCHTITAN_OP)
        return false;
    switch (sac_op) {
    case MEMEST_SAC_MM:
        return ++*mm % 2 == 1;   /* meta["forward_mm_count"] % 2 == 0: recomputed */
    case MEMEST_SAC_ATTN:
        return true;
    default:
        return false;
    }
}

/* ---- optimizer implementations ---- */

static const char *const impl_names[] = {
    [MEMEST_IMPL_FOREACH] = "foreach", [MEMEST_IMPL_FORLOOP] = "for-loop",
    [MEMEST_IMPL_FUSED] = "fused",
};
static_assert(sizeof impl_names / sizeof *impl_names == MEMEST_IMPL_COUNT,
              "one name per optimizer implementation");

const char *memest_optim_impl_name(enum memest_optim_impl i)
{
    return (unsigned)i < MEMEST_IMPL_COUNT ? impl_names[i] : "?";
}

const char *memest_optim_impl_label(const struct memest_step_cfg *cfg)
{
    const struct memest_optim_desc *d = memest_optim_desc(cfg->optim.kind);
    if (d->library)   /* its own Python loop */
        return memest_optim_impl_name(MEMEST_IMPL_FORLOOP);
    return d->kernel ? d->kernel : memest_optim_impl_name(cfg->impl);
}

int memest_optim_impl_parse(const char *s, enum memest_optim_impl *out)
{
    for (int i = 0; i < MEMEST_IMPL_COUNT; i++) {
        if (strcmp(s, impl_names[i]) == 0) {
            *out = (enum memest_optim_impl)i;
            return 0;
        }
    }
    return -1;
}

/* ---- autocast ---- */

static const char *const amp_names[] = {
    [MEMEST_AMP_NONE] = "none", [MEMEST_AMP_FP16] = "fp16", [MEMEST_AMP_BF16] = "bf16",
};
static_assert(sizeof amp_names / sizeof *amp_names == MEMEST_AMP_COUNT,
              "one name per autocast setting");

const char *memest_amp_name(enum memest_amp a)
{
    return (unsigned)a < MEMEST_AMP_COUNT ? amp_names[a] : "?";
}

int memest_amp_parse(const char *s, enum memest_amp *out)
{
    if (strcmp(s, "fp16") == 0 || strcmp(s, "float16") == 0)
        *out = MEMEST_AMP_FP16;
    else if (strcmp(s, "bf16") == 0 || strcmp(s, "bfloat16") == 0)
        *out = MEMEST_AMP_BF16;
    else
        return -1;
    return 0;
}

/* ---- zero_grad ---- */

static const char *const zero_grad_names[] = {
    [MEMEST_ZERO_GRAD_NONE] = "none", [MEMEST_ZERO_GRAD_ZEROS] = "zeros",
};
static_assert(sizeof zero_grad_names / sizeof *zero_grad_names == MEMEST_ZERO_GRAD_COUNT,
              "one name per zero_grad mode");

const char *memest_zero_grad_name(enum memest_zero_grad z)
{
    return (unsigned)z < MEMEST_ZERO_GRAD_COUNT ? zero_grad_names[z] : "?";
}

/* ---- losses ---- */

static const char *const loss_names[] = {
    [MEMEST_LOSS_CROSSENTROPY] = "crossentropyloss", [MEMEST_LOSS_NLL] = "nllloss",
    [MEMEST_LOSS_MSE] = "mseloss",                   [MEMEST_LOSS_L1] = "l1loss",
    [MEMEST_LOSS_SMOOTHL1] = "smoothl1loss",         [MEMEST_LOSS_HUBER] = "huberloss",
    [MEMEST_LOSS_BCEWITHLOGITS] = "bcewithlogitsloss", [MEMEST_LOSS_NONE] = "none",
};
static_assert(sizeof loss_names / sizeof *loss_names == MEMEST_LOSS_COUNT,
              "one name per loss");

int memest_loss_parse(const char *s, enum memest_loss *out)
{
    for (int i = 0; i < MEMEST_LOSS_COUNT; i++) {
        const char *a = s, *b = loss_names[i];
        while (*a && *b && tolower((unsigned char)*a) == *b)
            a++, b++;
        if (!*a && !*b) {
            *out = (enum memest_loss)i;
            return 0;
        }
    }
    return -1;
}

const char *memest_loss_name(enum memest_loss l)
{
    return (unsigned)l < MEMEST_LOSS_COUNT ? loss_names[l] : "?";
}

const char *memest_loss_names(char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < MEMEST_LOSS_COUNT && len < n; i++) {
        int w = snprintf(buf + len, n - len, "%s%s", i ? ", " : "", loss_names[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

int memest_loss_shapes(enum memest_loss l, int class_dim, const struct memest_shape *out,
                       enum memest_dtype dt, struct memest_loss_shapes *s,
                       struct memest_error *err)
{
    uint64_t numel;
    if (!memest_shape_numel(out, &numel))
        numel = UINT64_MAX;
    *s = (struct memest_loss_shapes){.class_index = false, .rows = numel, .target_dtype = dt};
    s->target = *out;
    memest_shape_contiguous_strides(&s->target);
    if (l != MEMEST_LOSS_CROSSENTROPY && l != MEMEST_LOSS_NLL)
        return 0;   /* elementwise (or none): a target like the output */
    char shape[96];
    bool last = class_dim == MEMEST_CLASS_DIM_LAST;   /* else PyTorch's (1, or 0: not given) */
    if (out->ndim < (last ? 1 : 2))
        return memest_errf(err, MEMEST_ERR_SCHEMA, "loss.class_dim",
                           "%s takes the classes along dim %d, but the model's last output is "
                           "%s%s", memest_loss_name(l), last ? -1 : 1,
                           memest_shape_str(out, shape, sizeof shape),
                           last ? "" : " (\"class_dim\": -1 takes its last dim)");
    s->class_index = true;
    s->class_dim = last ? out->ndim - 1 : 1;
    s->classes = out->size[s->class_dim];
    s->rows = s->classes ? numel / (uint64_t)s->classes : 0;
    s->target_dtype = MEMEST_I64;
    if (last) {   /* target.view(-1) */
        int64_t rows = (int64_t)s->rows;
        memest_shape_set(&s->target, 1, &rows);
        return 0;
    }
    int64_t sz[MEMEST_MAX_DIMS];   /* [N, d1, ..., dk] */
    int n = 0;
    for (int d = 0; d < out->ndim; d++)
        if (d != s->class_dim)
            sz[n++] = out->size[d];
    memest_shape_set(&s->target, n, sz);
    return 0;
}

/* ---- the step configuration ---- */

void memest_step_cfg_default(struct memest_step_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->optim.kind = MEMEST_OPT_ADAM;
    c->impl = MEMEST_IMPL_FOREACH;
    c->grad_accum = 1;
    c->loss = MEMEST_LOSS_CROSSENTROPY;
}

int memest_step_cfg_resolve_loss(struct memest_step_cfg *c, const char *model_loss,
                                 struct memest_error *err)
{
    if (c->loss_set || !model_loss)
        return 0;
    char names[MEMEST_LOSS_NAMES_LEN];
    if (memest_loss_parse(model_loss, &c->loss) != 0)
        return memest_errf(err, MEMEST_ERR_INTERNAL, NULL,
                           "internal: the model's loss \"%s\" is not one of %s", model_loss,
                           memest_loss_names(names, sizeof names));
    return 0;
}

int memest_step_cfg_check(const struct memest_step_cfg *c, struct memest_error *err)
{
    if (c->ncheckpoint_names > 0 && (c->checkpoint_policy_set || c->checkpoint_every))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--checkpoint B: the blocks named are refused with %s (torchtitan "
                           "checkpoints the top-level blocks)",
                           c->checkpoint_policy_set ? "--checkpoint-policy" : "--checkpoint-every");
    if (c->checkpoint_early_stop != MEMEST_EARLY_STOP_DEFAULT && c->checkpoint &&
        !memest_ckpt_nonreentrant(c))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--checkpoint-early-stop: early_stop is the non-reentrant checkpoint's "
                           "(--loop torchtune or torchtitan, or --checkpoint-policy "
                           "torchtitan-op); the reentrant one recomputes the whole block");
    if (c->checkpoint_every && c->checkpoint_policy == MEMEST_CKPT_TORCHTITAN_OP)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--checkpoint-every with --checkpoint-policy torchtitan-op: torchtitan's "
                           "selective_ac_option is either \"op\" or a number of blocks");
    char fused[160];
    const char *kernel = memest_optim_desc(c->optim.kind)->kernel;
    const struct memest_rank_view *rv = c->rank;
    if (memest_optim_desc(c->optim.kind)->whole_params && rv &&
        (rv->shard_optim || rv->cfg->tp > 1 || rv->cfg->cp > 1 || rv->cfg->pp > 1 || rv->cfg->ep > 1))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--optim %s with ZeRO, FSDP or model parallelism is not modelled (its "
                           "update of whole matrices on sharded ones is not); one GPU and DDP are",
                           memest_optim_name(c->optim.kind));
    if (memest_optim_desc(c->optim.kind)->gprog && rv &&
        (rv->cfg->tp > 1 || rv->cfg->cp > 1 || rv->cfg->pp > 1 || rv->cfg->ep > 1))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--optim %s with tensor, context, pipeline or expert parallelism is not "
                           "modelled (its distributed variant gathers each matrix over the "
                           "data-parallel ranks only); one GPU, DDP, ZeRO and FSDP are",
                           memest_optim_name(c->optim.kind));
    if (memest_optim_desc(c->optim.kind)->gprog && rv && rv->offload_optim)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--optim %s with --offload is not modelled (a CPU optimizer of its "
                           "Newton-Schulz update); leave --offload out",
                           memest_optim_name(c->optim.kind));
    const char *lib = memest_optim_desc(c->optim.kind)->library;
    if (c->impl == MEMEST_IMPL_FUSED && lib)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--optim-impl fused: %s is %s' optimizer, a Python loop over the "
                           "parameters of its own (leave --optim-impl out)",
                           memest_optim_name(c->optim.kind), lib);
    if (c->impl == MEMEST_IMPL_FUSED && kernel)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--optim-impl fused: %s is %s' optimizer, one fused kernel of its own "
                           "(leave --optim-impl out)", memest_optim_name(c->optim.kind), kernel);
    const struct memest_optim_desc *d = memest_optim_desc(c->optim.kind);
    if (c->impl == MEMEST_IMPL_FORLOOP && d->no_forloop)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--optim-impl for-loop: the temporaries of %s's for-loop are not "
                           "modelled (its foreach, CUDA's default, is)", d->name);
    if (d->since && c->torch_version && c->torch_version < d->since)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--optim %s: torch.optim has it from PyTorch %u.%u on, not in --torch "
                           "%u.%u", d->name, d->since / 100, d->since % 100,
                           c->torch_version / 100, c->torch_version % 100);
    if (c->impl == MEMEST_IMPL_FUSED &&
        !(memest_optim_desc(c->optim.kind)->accepts & MEMEST_OPTF_FUSED))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--optim-impl fused: PyTorch has no fused CUDA %s (fused exists for "
                           "%s)", memest_optim_name(c->optim.kind),
                           memest_optim_accepting(MEMEST_OPTF_FUSED, fused, sizeof fused));
    return 0;
}
