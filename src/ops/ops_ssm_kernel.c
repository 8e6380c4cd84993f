/* ops_ssm_kernel.c - what mamba_ssm's fused mamba_split_conv1d_scan_combined
 * allocates, in the order its code makes and drops each tensor, as a
 * transient over what memest declares for the mamba2_scan node.
 *
 * Read from state-spaces/mamba@v2.2.4 (mamba_ssm/ops/triton/:
 * ssd_combined.py MambaSplitConv1dScanCombinedFn.forward :758-834 and
 * backward :836-908, _mamba_chunk_scan_combined_fwd :281-331 and _bwd
 * :334-451, _chunk_scan_chunk_state_bwd_dx :219-278; ssd_chunk_state.py
 * _chunk_cumsum_fwd :671-672, _chunk_cumsum_bwd :699-706, _chunk_state_fwd
 * :742, _chunk_state_bwd_db :809-839; ssd_state_passing.py
 * _state_passing_fwd :205-206, _state_passing_bwd :239-278; ssd_bmm.py
 * _bmm_chunk_fwd :190; ssd_chunk_scan.py _chunk_scan_fwd :1247,
 * _chunk_scan_bwd_dstates :1404, _dC :1434-1463, _dcb :1490-1510,
 * _ddAcs_stable :1652-1670; layernorm_gated.py _layer_norm_fwd :127-130,
 * _layer_norm_bwd :290-333) and Dao-AILab/causal-conv1d@v1.5.0.post8
 * (csrc/causal_conv1d.cpp: fwd out = empty_like(x) :180; bwd dweight and
 * dbias zeros float32 :312-314, cast to the weight's dtype :379), as
 * transformers' BambaMixer.cuda_kernels_forward calls it (rmsnorm and
 * out_proj inside, norm_before_gate False, no seq_idx, initial_states or
 * final states; d_nonssm 0). causal_conv1d's output is empty_like of
 * xBC "b s d -> b d s", a strided view of zxbcdt: laid out [B, S, conv_dim],
 * so x, B, C have stride(-1) 1 and no .contiguous() copies. A local dies
 * when its Python function returns or its name is rebound.
 *
 * sm_count (torch.cuda.get_device_properties().multi_processor_count) sizes
 * the partial sums of _chunk_state_bwd_db, _chunk_scan_bwd_dC and _dcb
 * (nsplits) and _layer_norm_bwd's _dw [nrow_groups, dim]: an H100 SXM's 132
 * (OPS_SM_COUNT), as for Liger's RMSNorm. tests/tools/hf_peak_ssm.py makes
 * the same allocations in PyTorch. */
#include "ops_ssm_kernel.h"

static uint64_t nb(enum memest_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e)
{
    int64_t s[5] = {a, b, c, d, e};
    return sat_bytes(5, s, dt);
}

static int64_t cdiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* cuda_kernels_forward's forward: xBC_conv, the chunk cumsums, the chunk
 * states (float32, then passed in C's dtype), CB, out_x (saved), the normed
 * output of _layer_norm_fwd, rstd (saved), F.linear's output (the op's). */
uint64_t m2_kernel_fwd_workspace(const struct m2 *m, int64_t B, int64_t S, enum memest_dtype dt)
{
    const enum memest_dtype f = MEMEST_F32;
    int64_t nc = cdiv64(S, m->chunk), cs = m->chunk;
    uint64_t cum = nb(f, B, m->nh, nc, cs, 1), st32 = nb(f, B, nc, m->nh, m->hd, m->n);
    uint64_t cb = nb(f, B, nc, m->g, cs, cs), out_x = nb(dt, B, S, m->dim, 1, 1);
    uint64_t rstd = nb(f, m->g, B, S, 1, 1), out = nb(dt, B, S, m->out, 1, 1);
    struct transient t = {0, 0};
    tr_alloc(&t, nb(dt, B, S, m->conv_dim, 1, 1)); /* causal_conv1d_fwd */
    tr_alloc(&t, memest_sat_mul(cum, 2));          /* dt_out, dA_cumsum */
    tr_alloc(&t, st32);                            /* _chunk_state_fwd */
    tr_alloc(&t, nb(dt, B, nc, m->nh, m->hd, m->n)); /* _state_passing_fwd out, final_states */
    tr_alloc(&t, nb(f, B, m->nh, m->hd, m->n, 1));
    tr_free(&t, st32);
    tr_alloc(&t, cb);
    tr_alloc(&t, out_x);                           /* _chunk_scan_fwd */
    tr_free(&t, cb);
    tr_alloc(&t, out_x);                           /* _layer_norm_fwd out (the normed), rstd */
    tr_alloc(&t, rstd);
    tr_alloc(&t, out);                             /* F.linear */
    uint64_t declared = memest_sat_add(memest_sat_add(out_x, rstd), out);
    return t.peak > declared ? t.peak - declared : 0;
}

/* _layer_norm_bwd (rms, z and dz given, out given): dx, _dw [nrow_groups,
 * dim] float32 and its sum (cast to the weight's dtype, returned). */
static void ln_bwd(struct transient *t, const struct m2 *m, int64_t B, int64_t S, enum memest_dtype dt)
{
    int64_t group = m->dim / m->g, block = 1;
    while (block < group && block < INT64_MAX / 2)
        block *= 2;
    int64_t maxf = 65536 / (int64_t)memest_dtype_size(dt);
    block = block < maxf ? block : maxf;
    int64_t warps = block / 256 < 1 ? 1 : block / 256 > 8 ? 8 : block / 256;
    int64_t rows = cdiv64(OPS_SM_COUNT * cdiv64(4, warps), m->g);
    uint64_t dw = nb(MEMEST_F32, rows, m->dim, 1, 1, 1), s32 = nb(MEMEST_F32, m->dim, 1, 1, 1, 1);
    tr_alloc(t, nb(dt, B, S, m->dim, 1, 1));
    tr_alloc(t, dw);
    tr_alloc(t, s32);
    if (dt != MEMEST_F32) {
        tr_alloc(t, nb(dt, m->dim, 1, 1, 1, 1));
        tr_free(t, s32);
    }
    tr_free(t, dw);
}

/* _chunk_state_bwd_db / _chunk_scan_bwd_dC / _dcb: heads per program. */
static int64_t nsplits(const struct m2 *m, int64_t B, int64_t nc)
{
    int64_t ratio = m->nh / m->g, per = cdiv64(B * nc * m->nh, OPS_SM_COUNT);
    per = per < ratio ? per : ratio;
    per = per > 1 ? per : 1;
    return cdiv64(ratio, per);
}

/* _mamba_chunk_scan_combined_bwd (z None; dx, ddt, dB, dC written into
 * dxBC and dzxbcdt): dD, ddt_bias and dA survive it, the rest dies at its
 * return. */
static void scan_bwd(struct transient *t, const struct m2 *m, int64_t B, int64_t S, enum memest_dtype dt)
{
    const enum memest_dtype f = MEMEST_F32;
    int64_t nc = cdiv64(S, m->chunk), cs = m->chunk, sp = nsplits(m, B, nc);
    bool low = dt != f;
    uint64_t cum = nb(f, B, m->nh, nc, cs, 1), st32 = nb(f, B, nc, m->nh, m->hd, m->n);
    uint64_t ste = nb(dt, B, nc, m->nh, m->hd, m->n), cb = nb(f, B, nc, m->g, cs, cs);
    uint64_t dbc = nb(f, B, S, m->g, m->n, 1), head32 = nb(f, m->nh, 1, 1, 1, 1);
    uint64_t dpart = nb(f, cdiv64(cs, 32), B, nc, m->nh, 1);
    uint64_t base = t->cur;
    tr_alloc(t, nb(dt, B, S, m->nh, 1, 1));        /* dt.clone() */
    tr_alloc(t, memest_sat_mul(cum, 2));           /* _chunk_cumsum_fwd */
    tr_alloc(t, cb);                               /* _bmm_chunk_fwd */
    tr_alloc(t, st32);                             /* _chunk_state_fwd */
    tr_alloc(t, st32);                             /* _state_passing_fwd: out (float32), final ("_") */
    tr_alloc(t, nb(f, B, m->nh, m->hd, m->n, 1));
    tr_free(t, st32);
    tr_alloc(t, st32);                             /* _chunk_scan_bwd_dstates */
    tr_alloc(t, ste);                              /* _state_passing_bwd: dstates, states_converted */
    if (low)
        tr_alloc(t, ste);
    uint64_t part = nb(f, B, m->nh, nc, cdiv64(m->hd * m->n, 64), 1), ddac = nb(f, B, m->nh, nc, 1, 1);
    tr_alloc(t, part);
    tr_alloc(t, ddac);
    tr_free(t, part);
    tr_free(t, st32);                              /* the float32 dstates, rebound */
    if (low)
        tr_free(t, st32);                          /* the float32 states, rebound */
    tr_alloc(t, dpart);                            /* _chunk_scan_chunk_state_bwd_dx: dD, ddt */
    tr_alloc(t, cum);
    tr_alloc(t, head32);
    if (low) {
        tr_alloc(t, nb(dt, m->nh, 1, 1, 1, 1));
        tr_free(t, head32);
    }
    tr_free(t, dpart);
    tr_alloc(t, cum);                              /* _chunk_state_bwd_db: ddA_cumsum, dB */
    tr_alloc(t, memest_sat_mul(dbc, (uint64_t)sp));
    tr_alloc(t, dbc);
    tr_free(t, memest_sat_mul(dbc, (uint64_t)sp));
    tr_alloc(t, cum);                              /* _chunk_scan_bwd_dC: ddA_cumsum_prev, dC */
    tr_alloc(t, memest_sat_mul(dbc, (uint64_t)sp));
    tr_alloc(t, dbc);
    tr_free(t, memest_sat_mul(dbc, (uint64_t)sp));
    tr_alloc(t, memest_sat_mul(cb, (uint64_t)sp)); /* _chunk_scan_bwd_dcb */
    tr_alloc(t, cb);
    tr_free(t, memest_sat_mul(cb, (uint64_t)sp));
    tr_alloc(t, cum);                              /* flip, cumsum, flip */
    tr_alloc(t, cum);
    tr_free(t, cum);
    tr_alloc(t, cum);
    tr_free(t, cum);
    uint64_t acs = nb(f, B, m->nh, nc, cdiv64(cs, 32), cs);
    tr_alloc(t, acs);                              /* _chunk_scan_bwd_ddAcs_stable */
    tr_alloc(t, cum);
    tr_free(t, acs);
    tr_alloc(t, cum);                              /* ddA_next + ddA_prev */
    tr_free(t, cum);
    tr_alloc(t, head32);                           /* _chunk_cumsum_bwd: ddt_bias, dA */
    tr_alloc(t, head32);
    /* the return: all but dD, ddt_bias, dA */
    t->cur = memest_sat_add(base, memest_sat_add(memest_sat_mul(head32, 2),
                                                 low ? nb(dt, m->nh, 1, 1, 1, 1) : head32));
}

/* causal_conv1d_bwd (dx given, dout laid out as x: no copy): dweight,
 * dbias float32 zeros and their casts (returned). */
static void conv_bwd(struct transient *t, const struct m2 *m, enum memest_dtype dt, bool bias)
{
    uint64_t w32 = nb(MEMEST_F32, m->conv_dim, m->k, 1, 1, 1), b32 = nb(MEMEST_F32, m->conv_dim, 1, 1, 1, 1);
    tr_alloc(t, w32);
    if (bias)
        tr_alloc(t, b32);
    if (dt == MEMEST_F32)
        return;
    tr_alloc(t, nb(dt, m->conv_dim, m->k, 1, 1, 1));
    if (bias)
        tr_alloc(t, nb(dt, m->conv_dim, 1, 1, 1, 1));
    tr_free(t, w32);
    if (bias)
        tr_free(t, b32);
}

/* MambaSplitConv1dScanCombinedFn.backward: out_recompute, xBC_conv again,
 * dzxbcdt (returned), dxBC, dout = F.linear(dout, W.t()) (held by dy_rms to
 * the return), _layer_norm_bwd, the scan's backward, out_proj's weight
 * (einsum) and bias gradients, causal_conv1d_bwd; then the locals go. The
 * workspace: the fullest moment less what survives (the gradients). */
uint64_t m2_kernel_bwd_workspace(const struct m2 *m, int64_t B, int64_t S, enum memest_dtype dt,
                                 bool conv_bias, bool out_bias)
{
    uint64_t bsd = nb(dt, B, S, m->dim, 1, 1), bsc = nb(dt, B, S, m->conv_dim, 1, 1);
    struct transient t = {0, 0};
    tr_alloc(&t, bsd);                             /* out_recompute */
    tr_alloc(&t, bsc);                             /* causal_conv1d_fwd */
    tr_alloc(&t, nb(dt, B, S, m->proj, 1, 1));     /* dzxbcdt */
    tr_alloc(&t, bsc);                             /* dxBC */
    tr_alloc(&t, bsd);                             /* F.linear(dout, W.t()) */
    ln_bwd(&t, m, B, S, dt);
    scan_bwd(&t, m, B, S, dt);
    tr_alloc(&t, nb(dt, m->out, m->dim, 1, 1, 1));
    if (out_bias)
        tr_alloc(&t, nb(dt, m->out, 1, 1, 1, 1));
    conv_bwd(&t, m, dt, conv_bias);
    uint64_t locals = memest_sat_add(memest_sat_mul(bsd, 3), memest_sat_mul(bsc, 2));
    uint64_t kept = t.cur > locals ? t.cur - locals : 0;
    return t.peak > kept ? t.peak - kept : 0;
}
