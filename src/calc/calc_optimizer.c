/* calc_optimizer.c - optimizer state, as the optimizer table (optim.h) says
 * torch.optim and bitsandbytes keep it per parameter: its device state
 * tensors (with the tensors made once: bitsandbytes' qmaps), the float32
 * "step" scalars, kept on the host unless capturable or fused, and
 * bitsandbytes' paged state in unified memory, both reported apart from the
 * device bytes. */
#include "memest/calc.h"
#include "memest/checked.h"
#include "memest/optim.h"

unsigned memest_optim_copies(const struct memest_optim_cfg *c)
{
    return memest_optim_state_count(c);
}

int memest_calc_optimizer(const struct memest_run *r, const struct memest_optim_cfg *cfg,
                          struct memest_optstate *out, struct memest_error *err)
{
    const struct memest_optim_desc *d = memest_optim_desc(cfg->kind);
    struct memest_optstate s = {.copies = memest_optim_state_count(cfg)};
    bool ok = true, shared = false;
    for (uint32_t i = 0; i < r->nparams; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to >= 0 || !p->trainable)
            continue;
        struct memest_optim_state st;
        struct memest_optim_param op = memest_optim_param_run(r, i);
        memest_optim_shaped_state(cfg, &op, &st);
        for (unsigned k = 0; k < st.n; k++) {
            uint64_t *to = st.paged & (1u << k) ? &s.paged_bytes : &s.device_bytes;
            ok &= memest_add(*to, st.bytes[k], to);
        }
        shared |= st.shared;
        if (memest_optim_state_steps(cfg, &st))
            s.step_tensors++;
    }
    if (shared)
        ok &= memest_add(s.device_bytes, (uint64_t)d->nshared * d->shared_bytes, &s.device_bytes);
    s.host_bytes = s.step_tensors * 4;
    if (!ok)
        return memest_errf(err, MEMEST_ERR_LIMIT, NULL, "the optimizer state exceeds 2^63 bytes");
    *out = s;
    return 0;
}
