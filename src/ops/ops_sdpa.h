/* ops_sdpa.h - the SDPA kernels of ops_sdpa.c for an op that calls
 * scaled_dot_product_attention inside (nn.MultiheadAttention under
 * PyTorch >= 2.0: F.multi_head_attention_forward with need_weights=False). */
#ifndef MEMEST_OPS_SDPA_H
#define MEMEST_OPS_SDPA_H

#include "ops_common.h"

/* q [B, H, L, D], k and v [B, H, S, D], made by the calling op: operand i
 * (q, k, v) is its own tensor (whole[i][0] == 0) or a view of a storage of
 * whole[i][0] * whole[i][1] elements (a packed projection), held by an
 * earlier operand when shared[i]. */
struct sdpa_call {
    int64_t B, H, L, S, D;
    enum memest_dtype dt;
    double p;  /* dropout_p */
    bool mask; /* an attn_mask tensor [L, S] of the dtype is passed */
    int64_t whole[3][2];
    bool shared[3];
};

/* Runs the kernel scaled_dot_product_attention's auto picks (or the one
 * --attention names; its eager, transformers' own path, counts as auto),
 * while autograd records: saves what the kernel saves, its output (a new
 * tensor) included, and counts its MACs and workspaces. *out_like_q: the
 * output is laid out like q (flash unpadded, cuDNN), so a caller whose q
 * views [L, B, H, D] memory gets an output whose permute(2, 0, 1, 3) is
 * contiguous. Returns 0/-1. */
int sdpa_call_saves(struct memest_ictx *c, const struct sdpa_call *s, bool *out_like_q);

#endif
