/* calc_optimizer.c - optimizer state, as torch.optim keeps it per parameter:
 *   SGD: nothing; with momentum: momentum_buffer.
 *   Adam / AdamW: exp_avg, exp_avg_sq (+ max_exp_avg_sq with amsgrad), step.
 *   RMSprop: square_avg (+ momentum_buffer with momentum, + grad_avg when
 *     centered), step.
 *   Adagrad: sum, step.
 * "step" is a float32 scalar tensor kept on the host unless capturable or
 * fused, so it is reported apart from the device bytes. */
#include "memest/calc.h"
#include "memest/checked.h"

static unsigned copies_of(const struct memest_optim_cfg *c, bool *has_step)
{
    *has_step = c->kind != MEMEST_OPT_SGD;
    switch (c->kind) {
    case MEMEST_OPT_SGD:
        return c->momentum != 0 ? 1 : 0;
    case MEMEST_OPT_ADAM:
    case MEMEST_OPT_ADAMW:
        return 2 + (c->amsgrad ? 1 : 0);
    case MEMEST_OPT_RMSPROP:
        return 1 + (c->momentum != 0 ? 1 : 0) + (c->centered ? 1 : 0);
    case MEMEST_OPT_ADAGRAD:
        return 1;
    case MEMEST_OPT_COUNT:
        break;
    }
    return 0;
}

unsigned memest_optim_copies(const struct memest_optim_cfg *c)
{
    bool has_step;
    return copies_of(c, &has_step);
}

int memest_calc_optimizer(const struct memest_run *r, const struct memest_optim_cfg *cfg,
                          struct memest_optstate *out, struct memest_error *err)
{
    bool has_step;
    struct memest_optstate s = {.copies = copies_of(cfg, &has_step)};
    bool ok = true;
    for (uint32_t i = 0; i < r->nparams; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to >= 0 || !p->trainable)
            continue;
        uint64_t bytes;
        ok &= memest_mul(r->storages[p->storage].bytes, s.copies, &bytes) &&
              memest_add(s.device_bytes, bytes, &s.device_bytes);
        if (has_step)
            s.step_tensors++;
    }
    s.host_bytes = s.step_tensors * 4;
    if (!ok)
        return memest_errf(err, MEMEST_ERR_LIMIT, NULL, "the optimizer state exceeds 2^63 bytes");
    *out = s;
    return 0;
}
