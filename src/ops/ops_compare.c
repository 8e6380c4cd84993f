/* ops_compare.c - the comparisons eq, ne, lt, le, gt, ge of a tensor with
 * another (broadcasting) or with a number: a bool result that requires no
 * grad, so nothing is saved and no gradient flows back (comparisons are not
 * differentiable: tests/reference/ops_b_saved_*.txt). No MACs. */
#include "ops_common.h"

enum { CMP_OTHER };
static const struct memest_argspec compare_args[] = {
    [CMP_OTHER] = {"other", MEMEST_ARG_FLOAT, .optional = true,
                   .doc = "a number to compare with, instead of a second input"},
};

static int infer_compare(struct memest_ictx *c)
{
    bool num = !memest_arg(c, CMP_OTHER)->none;
    int nin = memest_in_count(c);
    if (nin == 2 && num)
        return memest_fail(c, "give either a second input or a number \"other\", not both");
    if (nin == 1 && !num)
        return memest_fail(c, "needs a second input or a number \"other\"");
    struct memest_shape out = *memest_in_shape(c, 0);
    int like = 0;
    if (nin == 2) {
        struct memest_shape b = *memest_in_shape(c, 1);
        if (!memest_shape_broadcast(memest_in_shape(c, 0), &b, &out))
            return memest_fail(c, "shapes %s and %s are not broadcastable", IN_STR(c, 0),
                               IN_STR(c, 1));
        like = memest_shape_equal(&out, memest_in_shape(c, 0)) ? 0 : 1;
    }
    for (int i = 0; i < nin; i++)
        memest_grad_none(c, i);
    if (memest_out_like(c, &out, like, MEMEST_BOOL) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, false);
    return 0;
}

#define CMP(nm, text)                                                                           \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 2, .args = compare_args,                            \
        .nargs = NARGS(compare_args), .infer = infer_compare, .doc = text,                      \
    }

const struct memest_op_desc memest_ops_compare[] = {
    CMP("eq", "torch.eq / == (bool, no gradient)"),
    CMP("ne", "torch.ne / != (bool, no gradient)"),
    CMP("lt", "torch.lt / < (bool, no gradient)"),
    CMP("le", "torch.le / <= (bool, no gradient)"),
    CMP("gt", "torch.gt / > (bool, no gradient)"),
    CMP("ge", "torch.ge / >= (bool, no gradient)"),
};
const int memest_ops_compare_count = NOPS(memest_ops_compare);
