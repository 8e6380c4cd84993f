/* ops_einsum.c - torch.einsum, as aten/src/ATen/native/Linear.cpp computes
 * it (the same in PyTorch 1.13 and 2.x for what memest models; the two
 * give the same saved tensors on every case of tests/reference/
 * ops_b_saved_*.txt):
 *
 *  1. the equation is parsed: labels [a-zA-Z] per operand, at most one
 *     "..." each, spaces ignored; an explicit output after "->", else the
 *     implicit one ("..." then the labels seen once, in alphabetical order,
 *     upper case first);
 *  2. every operand is aligned to the permuted shape "output dims, then the
 *     contraction dims" (a repeated label takes a diagonal, a missing label
 *     becomes a size-1 dim; all views);
 *  3. the operands are contracted left to right (no path is given for two
 *     operands; for more, torch.einsum's Python wrapper passes opt_einsum's
 *     path when that package is installed: memest contracts left to right,
 *     as PyTorch does without it). Before each pair, the contraction dims
 *     that no later operand has are summed in the one operand holding them
 *     (a new tensor). sumproduct_pair then multiplies the two: with no
 *     dim to sum, at::mul (MulBackward0 saves each operand when the other
 *     requires grad; no MACs); else left.permute(lro, lo, sum).reshape(
 *     [LRO, LO, SUM]) and right.permute(lro, sum, ro).reshape([LRO, SUM,
 *     RO]) go to at::bmm, whose BmmBackward0 saves each reshaped operand
 *     when the other requires grad: the operand itself (a view) when the
 *     reshape can view it, else the contiguous copy reshape made (measured:
 *     MViT's "bythwc,hkc->bythwk" saves a [4, 60, 8] copy of its first
 *     operand). The bmm result, viewed and permuted back, is the next
 *     operand or the output;
 *  4. a single operand with contraction dims is summed (a new tensor); one
 *     without is returned as the permuted (diagonal) view of the input.
 * MACs: the bmm's, LRO * LO * SUM * RO per pair (torch.utils.flop_counter
 * counts the bmm einsum lowers to); backward: once more for each operand
 * that requires grad. The copies and sums nobody saves are the forward's
 * workspace. */
#include <ctype.h>

#include "ops_common.h"

#define NLABELS 52
#define ELLIPSIS NLABELS
/* working dims: every label plus the ellipsis' dims */
#define WDIMS (NLABELS + MEMEST_MAX_DIMS)
#define MAX_OPERANDS 16

/* A tensor of the contraction: its geometry over `perm` working dims, and
 * where it lives: input `src`'s storage (src >= 0) or a new tensor the
 * contraction made (src < 0, `numel` elements, `tmp` its transient index). */
struct wt {
    int64_t size[WDIMS], stride[WDIMS];
    int src, tmp;
    uint64_t numel;
    bool rg;
};

struct einsum {
    struct memest_ictx *c;
    int nops, perm, out_dims;
    enum memest_dtype dt;
    /* the new tensors not saved: bytes, freed after the pair that uses them */
    struct transient tr;
    double macs, bwd;
};

static int label_index(unsigned char ch)
{
    return isupper(ch) ? ch - 'A' : ch - 'a' + 26;
}

/* ---- parsing ---- */

struct parsed {
    int labels[MAX_OPERANDS][MEMEST_MAX_DIMS + 1]; /* label or ELLIPSIS */
    int nlab[MAX_OPERANDS];
    int perm_index[NLABELS]; /* each label's working dim, -1 unused */
    int count[NLABELS];      /* operands' occurrences of each label */
    int ell_dims, ell_index, out_dims, perm;
    bool ell_out;
};

static int parse_lhs(struct memest_ictx *c, const char *eq, size_t len, struct parsed *p)
{
    int op = 0;
    bool ell = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)eq[i];
        if (ch == ' ')
            continue;
        if (ch == ',') {
            if (++op >= memest_in_count(c))
                return memest_fail(c, "fewer operands were provided than specified in "
                                      "the equation");
            ell = false;
            continue;
        }
        int lab;
        if (ch == '.') {
            if (ell)
                return memest_fail(c, "found '.' for operand %d for which an ellipsis "
                                      "was already found",
                                   op);
            if (!(i + 2 < len && eq[i + 1] == '.' && eq[i + 2] == '.'))
                return memest_fail(c, "found '.' for operand %d that is not part of "
                                      "any ellipsis",
                                   op);
            i += 2;
            ell = true;
            lab = ELLIPSIS;
        } else if (isalpha(ch) && ch < 128) {
            lab = label_index(ch);
        } else {
            return memest_fail(c, "invalid subscript given at index %zu in the "
                                  "equation string, subscripts must be in [a-zA-Z]",
                               i);
        }
        if (p->nlab[op] > MEMEST_MAX_DIMS)
            return memest_fail(c, "operand %d has more subscripts than dimensions", op);
        p->labels[op][p->nlab[op]++] = lab;
    }
    if (op != memest_in_count(c) - 1)
        return memest_fail(c, "more operands were provided than specified in the "
                              "equation");
    return 0;
}

static int parse_rhs(struct memest_ictx *c, const char *rhs, size_t off, struct parsed *p)
{
    int perm = 0;
    for (size_t i = 0; rhs[i]; i++) {
        unsigned char ch = (unsigned char)rhs[i];
        if (ch == ' ')
            continue;
        if (ch == '.') {
            if (p->ell_out)
                return memest_fail(c, "found '.' for output but an ellipsis (...) was "
                                      "already found");
            if (!(rhs[i + 1] == '.' && rhs[i + 1] && rhs[i + 2] == '.'))
                return memest_fail(c, "found '.' for output that is not part of any "
                                      "ellipsis (...)");
            i += 2;
            p->ell_index = perm;
            perm += p->ell_dims;
            p->ell_out = true;
            continue;
        }
        if (!(isalpha(ch) && ch < 128))
            return memest_fail(c, "invalid subscript given at index %zu in the "
                                  "equation string, subscripts must be in [a-zA-Z]",
                               off + i);
        int lab = label_index(ch);
        if (p->count[lab] == 0)
            return memest_fail(c, "output subscript %c does not appear in the "
                                  "equation for any input operand",
                               ch);
        if (p->perm_index[lab] >= 0)
            return memest_fail(c, "output subscript %c appears more than once in the "
                                  "output",
                               ch);
        p->perm_index[lab] = perm++;
    }
    return perm;
}

static int parse(struct memest_ictx *c, const char *eq, struct parsed *p)
{
    memset(p, 0, sizeof *p);
    for (int l = 0; l < NLABELS; l++)
        p->perm_index[l] = -1;
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    if (parse_lhs(c, eq, lhs_len, p) != 0)
        return -1;
    for (int i = 0; i < memest_in_count(c); i++) {
        int ndim = memest_in_shape(c, i)->ndim, n = p->nlab[i];
        bool ell = false;
        for (int k = 0; k < p->nlab[i]; k++) {
            if (p->labels[i][k] == ELLIPSIS) {
                ell = true;
                n--;
            } else {
                p->count[p->labels[i][k]]++;
            }
        }
        if (ell ? n > ndim : n != ndim)
            return memest_fail(c, "the number of subscripts in the equation (%d) %s "
                                  "the number of dimensions (%d) for operand %d%s",
                               n, ell ? "is more than" : "does not match", ndim, i,
                               ell ? "" : " and no ellipsis was given");
        if (ell && ndim - n > p->ell_dims)
            p->ell_dims = ndim - n;
    }
    int perm = 0;
    if (!arrow) { /* implicit: the ellipsis, then the labels seen once */
        perm = p->ell_dims;
        p->ell_out = true;
        for (int l = 0; l < NLABELS; l++)
            if (p->count[l] == 1)
                p->perm_index[l] = perm++;
    } else if ((perm = parse_rhs(c, arrow + 2, lhs_len + 2, p)) < 0) {
        return -1;
    }
    p->out_dims = perm;
    if (!p->ell_out) {
        p->ell_index = perm;
        perm += p->ell_dims;
    }
    for (int l = 0; l < NLABELS; l++)
        if (p->count[l] > 0 && p->perm_index[l] < 0)
            p->perm_index[l] = perm++;
    p->perm = perm;
    if (p->out_dims > MEMEST_MAX_DIMS)
        return memest_fail(c, "the output would have %d dimensions; memest supports at "
                              "most %d",
                           p->out_dims, MEMEST_MAX_DIMS);
    return 0;
}

/* ---- alignment ---- */

static void remove_dim(struct wt *t, int ndim, int d)
{
    for (int k = d; k + 1 < ndim; k++) {
        t->size[k] = t->size[k + 1];
        t->stride[k] = t->stride[k + 1];
    }
}

/* Step 2 for operand i: diagonals, size-1 dims for the missing labels, the
 * permutation; label and ellipsis sizes checked as they broadcast. */
static int align(struct memest_ictx *c, const struct parsed *p, int i, int64_t *label_size,
                 int64_t *ell_size, int *dim_counts, struct wt *t)
{
    const struct memest_shape s = *memest_in_shape(c, i);
    struct wt g = {.src = i, .tmp = -1, .rg = memest_in_requires_grad(c, i)};
    int nd = s.ndim;
    for (int d = 0; d < nd; d++) {
        g.size[d] = s.size[d];
        g.stride[d] = s.stride[d];
    }
    int permutation[WDIMS];
    for (int k = 0; k < p->perm; k++)
        permutation[k] = -1;
    int dim = 0;
    for (int k = 0; k < p->nlab[i]; k++) {
        int lab = p->labels[i][k];
        if (lab == ELLIPSIS) {
            int n = s.ndim - (p->nlab[i] - 1);
            for (int j = p->ell_dims - n; j < p->ell_dims; j++) {
                if (g.size[dim] != 1) {
                    if (ell_size[j] != 1 && ell_size[j] != g.size[dim])
                        return memest_fail(c, "dimension %d covered by ellipsis in "
                                              "operand %d has size %lld which does not "
                                              "broadcast with previously seen ellipsis with "
                                              "size %lld for the respective dimension",
                                           dim, i, (long long)g.size[dim],
                                           (long long)ell_size[j]);
                    ell_size[j] = g.size[dim];
                    dim_counts[p->ell_index + j]++;
                }
                permutation[p->ell_index + j] = dim++;
            }
        } else if (permutation[p->perm_index[lab]] == -1) {
            if (g.size[dim] != 1) {
                if (label_size[lab] != 1 && label_size[lab] != g.size[dim])
                    return memest_fail(c, "subscript %c has size %lld for operand %d "
                                          "which does not broadcast with previously seen size "
                                          "%lld",
                                       lab < 26 ? 'A' + lab : 'a' + lab - 26,
                                       (long long)g.size[dim], i, (long long)label_size[lab]);
                label_size[lab] = g.size[dim];
                dim_counts[p->perm_index[lab]]++;
            }
            permutation[p->perm_index[lab]] = dim++;
        } else { /* repeated label: diagonal(prev, dim).movedim(-1, prev) */
            int prev = permutation[p->perm_index[lab]];
            if (g.size[dim] != g.size[prev])
                return memest_fail(c, "subscript %c is repeated for operand %d but the "
                                      "sizes don't match, %lld != %lld",
                                   lab < 26 ? 'A' + lab : 'a' + lab - 26, i,
                                   (long long)g.size[dim], (long long)g.size[prev]);
            g.stride[prev] += g.stride[dim];
            remove_dim(&g, nd--, dim);
        }
    }
    for (int k = 0; k < p->perm; k++) { /* unsqueeze(dim) for each missing label */
        if (permutation[k] != -1)
            continue;
        g.stride[dim] = dim < nd ? g.size[dim] * g.stride[dim] : 1;
        g.size[dim] = 1;
        permutation[k] = dim++;
        nd++;
    }
    *t = g;
    for (int k = 0; k < p->perm; k++) {
        t->size[k] = g.size[permutation[k]];
        t->stride[k] = g.stride[permutation[k]];
    }
    return 0;
}

/* ---- contraction ---- */

/* True when dims idx[0..n) of t (in that order) merge into one dim without
 * a copy: PyTorch's reshape views exactly when each group it flattens does
 * (size-1 dims never matter). */
static bool mergeable(const struct wt *t, const int *idx, int n)
{
    int64_t prev_stride = 0;
    bool any = false;
    for (int k = 0; k < n; k++) {
        int64_t sz = t->size[idx[k]], st = t->stride[idx[k]];
        if (sz == 0)
            return true;
        if (sz == 1)
            continue;
        if (any && prev_stride != sz * st)
            return false;
        prev_stride = st;
        any = true;
    }
    return true;
}

static uint64_t elems(const struct wt *t, int perm)
{
    uint64_t n = 1;
    for (int k = 0; k < perm; k++)
        n = memest_sat_mul(n, (uint64_t)t->size[k]);
    return n;
}

/* A new tensor of `numel` elements that lives until the pair that uses it
 * ends (transient unless saved). */
static void new_tensor(struct einsum *e, struct wt *t, uint64_t numel)
{
    t->src = -1;
    t->numel = numel;
    t->tmp = 1;
    tr_alloc(&e->tr, memest_sat_mul(numel, memest_dtype_size(e->dt)));
}

/* Frees a new tensor that nothing keeps any more. */
static void drop(struct einsum *e, struct wt *t)
{
    if (t->src < 0 && t->tmp > 0) {
        tr_free(&e->tr, memest_sat_mul(t->numel, memest_dtype_size(e->dt)));
        t->tmp = 0;
    }
}

/* Saves operand t of a product: the tensor itself when its reshape views
 * it, else the copy of `numel` elements the reshape makes. */
static int save_operand(struct einsum *e, struct wt *t, bool viewable, uint64_t numel)
{
    if (!viewable) /* the copy, saved; the operand stays what it was */
        return save_new_if(e->c, 1, (const int64_t[]){(int64_t)numel}, e->dt);
    if (t->src >= 0)
        return memest_save_in(e->c, t->src);
    if (t->tmp > 0) { /* saved instead of transient */
        tr_free(&e->tr, memest_sat_mul(t->numel, memest_dtype_size(e->dt)));
        t->tmp = 0;
    }
    return save_new_if(e->c, 1, (const int64_t[]){(int64_t)t->numel}, e->dt);
}

/* The contiguous geometry of t's sizes (a new tensor). */
static void contiguous(struct wt *t, int perm)
{
    int64_t st = 1;
    for (int k = perm - 1; k >= 0; k--) {
        t->stride[k] = st;
        st *= t->size[k] > 1 ? t->size[k] : 1;
    }
}

/* sumproduct_pair(a, b, sum dims, keepdim=true) into *r. */
static int product(struct einsum *e, struct wt *a, struct wt *b, const bool *sum, struct wt *r)
{
    int perm = e->perm, lro[WDIMS], lo[WDIMS], ro[WDIMS], sd[WDIMS], nlro = 0, nlo = 0, nro = 0,
        nsum = 0;
    int64_t lro_n = 1, lo_n = 1, ro_n = 1, sum_n = 1;
    *r = (struct wt){.rg = a->rg || b->rg};
    for (int k = 0; k < perm; k++) {
        bool sl = a->size[k] != 1, sr = b->size[k] != 1;
        r->size[k] = sl ? a->size[k] : b->size[k];
        if (sum[k]) {
            sd[nsum++] = k;
            sum_n *= a->size[k];
            r->size[k] = 1;
        } else if (sl && sr) {
            lro[nlro++] = k;
            lro_n *= a->size[k];
        } else if (sl) {
            lo[nlo++] = k;
            lo_n *= a->size[k];
        } else {
            ro[nro++] = k;
            ro_n *= b->size[k];
        }
    }
    int64_t rn;
    if (!mul_i64(lro_n, lo_n, &rn) || !mul_i64(rn, ro_n, &rn) || rn > MEMEST_DIM_MAX)
        return memest_fail(e->c, "the product of the operands would have more than 2^53 "
                                 "elements");
    bool need_a = b->rg, need_b = a->rg; /* each saved for the other's gradient */
    if (nsum == 0) { /* at::mul on the broadcast operands */
        if ((need_a && save_operand(e, a, true, 0) != 0) ||
            (need_b && save_operand(e, b, true, 0) != 0))
            return -1;
        new_tensor(e, r, (uint64_t)rn);
        contiguous(r, perm);
        return 0;
    }
    /* left: lro, lo, sum -> [LRO, LO, SUM]; right: lro, sum, ro -> [LRO, SUM, RO] */
    bool va = mergeable(a, lro, nlro) && mergeable(a, lo, nlo) && mergeable(a, sd, nsum);
    bool vb = mergeable(b, lro, nlro) && mergeable(b, sd, nsum) && mergeable(b, ro, nro);
    uint64_t na = (uint64_t)lro_n * (uint64_t)lo_n * (uint64_t)sum_n,
             nb = (uint64_t)lro_n * (uint64_t)sum_n * (uint64_t)ro_n;
    if ((need_a && save_operand(e, a, va, na) != 0) || (need_b && save_operand(e, b, vb, nb) != 0))
        return -1;
    uint64_t copies = 0; /* the reshapes' copies nobody saves, freed after the bmm */
    if (!va && !need_a)
        copies = memest_sat_add(copies, memest_sat_mul(na, memest_dtype_size(e->dt)));
    if (!vb && !need_b)
        copies = memest_sat_add(copies, memest_sat_mul(nb, memest_dtype_size(e->dt)));
    tr_alloc(&e->tr, copies);
    /* the bmm result [LRO, LO, RO] viewed as (lro, lo, 1s, ro) and permuted
     * back to the working order */
    new_tensor(e, r, (uint64_t)rn);
    tr_free(&e->tr, copies);
    /* strides: walk the bmm layout (lro, lo, sum, ro) from the innermost */
    int order[WDIMS], n = 0;
    for (int k = 0; k < nlro; k++)
        order[n++] = lro[k];
    for (int k = 0; k < nlo; k++)
        order[n++] = lo[k];
    for (int k = 0; k < nsum; k++)
        order[n++] = sd[k];
    for (int k = 0; k < nro; k++)
        order[n++] = ro[k];
    int64_t st = 1;
    for (int k = n - 1; k >= 0; k--) {
        r->stride[order[k]] = st;
        st *= r->size[order[k]] > 1 ? r->size[order[k]] : 1;
    }
    double macs = (double)lro_n * (double)lo_n * (double)sum_n * (double)ro_n;
    e->macs += macs;
    e->bwd += macs * ((a->rg ? 1 : 0) + (b->rg ? 1 : 0));
    return 0;
}

/* Sums the dims marked in `dims` of t (keepdim): a new contiguous tensor. */
static void sum_dims(struct einsum *e, struct wt *t, const bool *dims)
{
    struct wt s = {.rg = t->rg};
    for (int k = 0; k < e->perm; k++)
        s.size[k] = dims[k] ? 1 : t->size[k];
    new_tensor(e, &s, elems(&s, e->perm));
    contiguous(&s, e->perm);
    drop(e, t);
    *t = s;
}

/* Output 0 from the final operand: its first out_dims dims. */
static int declare_output(struct einsum *e, const struct wt *t)
{
    struct memest_shape g = {.ndim = e->out_dims};
    for (int k = 0; k < e->out_dims; k++) {
        g.size[k] = t->size[k];
        g.stride[k] = t->stride[k];
    }
    if (t->src >= 0)
        return memest_out_view(e->c, t->src, &g, 0) < 0 ? -1 : 0;
    /* the result is an output, not a transient */
    if (t->tmp > 0)
        tr_free(&e->tr, memest_sat_mul(t->numel, memest_dtype_size(e->dt)));
    return memest_out_new_strided(e->c, &g, t->numel, e->dt) < 0 ? -1 : 0;
}

enum { EI_EQUATION };
static const struct memest_argspec einsum_args[] = {
    [EI_EQUATION] = {"equation", MEMEST_ARG_STR, .required = true,
                     .doc = "e.g. \"bhid,bhjd->bhij\"; \"...\" and the implicit output as PyTorch"},
};

static int infer_einsum(struct memest_ictx *c)
{
    int nops = memest_in_count(c);
    if (nops > MAX_OPERANDS)
        return memest_fail(c, "memest supports at most %d operands", MAX_OPERANDS);
    enum memest_dtype dt = memest_in_dtype(c, 0);
    for (int i = 0; i < nops; i++) {
        if (need_float(c, i) != 0)
            return -1;
        if (memest_in_dtype(c, i) != dt)
            return memest_fail(c, "expected all operands to have the same dtype, got "
                                  "%s and %s",
                               memest_dtype_name(dt), memest_dtype_name(memest_in_dtype(c, i)));
    }
    struct parsed p;
    if (parse(c, memest_arg(c, EI_EQUATION)->s, &p) != 0)
        return -1;
    struct einsum e = {.c = c, .nops = nops, .perm = p.perm, .out_dims = p.out_dims, .dt = dt};
    int64_t label_size[NLABELS], ell_size[MEMEST_MAX_DIMS];
    int dim_counts[WDIMS] = {0};
    for (int l = 0; l < NLABELS; l++)
        label_size[l] = 1;
    for (int j = 0; j < MEMEST_MAX_DIMS; j++)
        ell_size[j] = 1;
    struct wt ops[MAX_OPERANDS];
    for (int i = 0; i < nops; i++)
        if (align(c, &p, i, label_size, ell_size, dim_counts, &ops[i]) != 0)
            return -1;

    struct wt cur = ops[0];
    for (int i = 1; i < nops; i++) { /* ops.emplace_front: the result is contracted next */
        struct wt *a = &cur, *b = &ops[i];
        bool sum[WDIMS] = {false}, sa[WDIMS] = {false}, sb[WDIMS] = {false};
        bool any_a = false, any_b = false;
        for (int d = p.out_dims; d < p.perm; d++) {
            if (a->size[d] != 1 && b->size[d] != 1) {
                if (--dim_counts[d] == 1) {
                    sum[d] = true;
                    dim_counts[d] = 0;
                }
            } else if (dim_counts[d] == 1) {
                if (a->size[d] != 1) {
                    sa[d] = any_a = true;
                    dim_counts[d] = 0;
                } else if (b->size[d] != 1) {
                    sb[d] = any_b = true;
                    dim_counts[d] = 0;
                }
            }
        }
        if (any_a)
            sum_dims(&e, a, sa);
        if (any_b)
            sum_dims(&e, b, sb);
        struct wt r;
        if (product(&e, a, b, sum, &r) != 0)
            return -1;
        drop(&e, a);
        drop(&e, b);
        cur = r;
    }
    if (nops == 1 && p.perm > p.out_dims) { /* ops[0].sum(contraction dims) */
        bool all[WDIMS] = {false};
        for (int d = p.out_dims; d < p.perm; d++)
            all[d] = true;
        sum_dims(&e, &cur, all);
    }
    if (declare_output(&e, &cur) != 0)
        return -1;
    memest_workspace(c, e.tr.peak);
    if (e.macs > 0) {
        memest_macs(c, e.macs);
        memest_macs_bwd(c, e.bwd);
    }
    return 0;
}

const struct memest_op_desc memest_ops_einsum[] = {
    {.name = "einsum", .min_in = 1, .max_in = MAX_OPERANDS, .args = einsum_args,
     .nargs = NARGS(einsum_args), .infer = infer_einsum,
     .doc = "torch.einsum(equation, *operands) (bmm on the reshaped operands)",
     .amp = MEMEST_AMPP_LOW, .lib = MEMEST_LIB_CUBLAS},
};
const int memest_ops_einsum_count = NOPS(memest_ops_einsum);
