/* ops_ssm_kernel.h - the transient memory of mamba_ssm's fused
 * mamba_split_conv1d_scan_combined (forward and backward), for ops_ssm.c's
 * mamba2_scan. */
#ifndef MEMEST_OPS_SSM_KERNEL_H
#define MEMEST_OPS_SSM_KERNEL_H

#include "ops_common.h"

/* The mixer: nh heads of hd, g groups, state n, conv width k, out_proj's
 * out features, the scan's chunk; dim = nh hd, conv_dim = dim + 2 g n,
 * proj = dim + conv_dim + nh (zxbcdt's last dim). */
struct m2 {
    int64_t nh, hd, g, n, k, out, chunk, dim, conv_dim, proj;
};

/* zxbcdt [B, S, proj] of dtype dt: the bytes the kernel's forward (resp.
 * backward) holds at its fullest beyond what memest declares for the op
 * (its output and saved tensors; the input and parameter gradients). */
uint64_t m2_kernel_fwd_workspace(const struct m2 *m, int64_t B, int64_t S, enum memest_dtype dt);
uint64_t m2_kernel_bwd_workspace(const struct m2 *m, int64_t B, int64_t S, enum memest_dtype dt,
                                 bool conv_bias, bool out_bias);

#endif
