/* test_step.c - the step vocabulary (step.h): every name of each table
 * parses back to its value, the loss is resolved once (--loss over the
 * model's "loss" over cross-entropy), a step PyTorch cannot run is a
 * usage error, and the loss's shapes follow nn.CrossEntropyLoss (classes
 * along dim 1) or the language model's flattening (class_dim -1). */
#include <string.h>

#include "check.h"
#include "memest/step.h"

static void test_names(void)
{
    static const char *const impls[] = {"foreach", "for-loop", "fused"};
    for (int i = 0; i < MEMEST_IMPL_COUNT; i++) {
        enum memest_optim_impl v;
        CHECK_STR_EQ(memest_optim_impl_name((enum memest_optim_impl)i), impls[i]);
        CHECK_EQ_INT(memest_optim_impl_parse(impls[i], &v), 0);
        CHECK_EQ_INT(v, i);
    }
    enum memest_optim_impl iv;
    CHECK_EQ_INT(memest_optim_impl_parse("forloop", &iv), -1);
    CHECK_STR_EQ(memest_optim_impl_name(MEMEST_IMPL_COUNT), "?");

    static const char *const optims[] = {"sgd", "adam", "adamw", "rmsprop", "adagrad",
                                         "adam8bit", "adamw8bit", "paged_adam8bit",
                                         "paged_adamw8bit", "paged_adamw", "paged_adamw32bit",
                                         "adafactor", "lion", "lion8bit", "paged_lion",
                                         "paged_lion8bit", "muon", "hf_adafactor"};
    for (int i = 0; i < MEMEST_OPT_COUNT; i++) {
        enum memest_optim v;
        CHECK_STR_EQ(memest_optim_name((enum memest_optim)i), optims[i]);
        CHECK_EQ_INT(memest_optim_parse(optims[i], &v), 0);
        CHECK_EQ_INT(v, i);
    }

    CHECK_STR_EQ(memest_amp_name(MEMEST_AMP_NONE), "none");
    CHECK_STR_EQ(memest_amp_name(MEMEST_AMP_FP16), "fp16");
    CHECK_STR_EQ(memest_amp_name(MEMEST_AMP_BF16), "bf16");
    CHECK_STR_EQ(memest_amp_name(MEMEST_AMP_COUNT), "?");
    enum memest_amp a = MEMEST_AMP_NONE;
    CHECK_EQ_INT(memest_amp_parse("float16", &a), 0);
    CHECK_EQ_INT(a, MEMEST_AMP_FP16);
    CHECK_EQ_INT(memest_amp_parse("bfloat16", &a), 0);
    CHECK_EQ_INT(a, MEMEST_AMP_BF16);
    CHECK_EQ_INT(memest_amp_parse("none", &a), -1);   /* not a value of --amp */

    /* every loss by its name, in any case; the list for messages names them all */
    for (int i = 0; i < MEMEST_LOSS_COUNT; i++) {
        enum memest_loss l;
        const char *name = memest_loss_name((enum memest_loss)i);
        CHECK_EQ_INT(memest_loss_parse(name, &l), 0);
        CHECK_EQ_INT(l, i);
        char names[MEMEST_LOSS_NAMES_LEN];
        CHECK(strstr(memest_loss_names(names, sizeof names), name) != NULL);
    }
    /* the whole list, in table order, fits its buffer: PyTorch's loss
     * classes memest models (torch.nn, lower case), and "none" */
    char all[MEMEST_LOSS_NAMES_LEN];
    CHECK_STR_EQ(memest_loss_names(all, sizeof all),
                 "crossentropyloss, nllloss, mseloss, l1loss, smoothl1loss, huberloss, "
                 "bcewithlogitsloss, none");
    enum memest_loss l;
    CHECK_EQ_INT(memest_loss_parse("MSELoss", &l), 0);
    CHECK_EQ_INT(l, MEMEST_LOSS_MSE);
    CHECK_EQ_INT(memest_loss_parse("mse", &l), -1);
    CHECK_EQ_INT(memest_loss_parse("", &l), -1);
}

static void test_resolve_loss(void)
{
    struct memest_step_cfg c;
    struct memest_error err = {0};
    memest_step_cfg_default(&c);
    CHECK_EQ_INT(c.loss, MEMEST_LOSS_CROSSENTROPY);
    CHECK_EQ_INT(memest_step_cfg_resolve_loss(&c, NULL, &err), 0);   /* no "loss" */
    CHECK_EQ_INT(c.loss, MEMEST_LOSS_CROSSENTROPY);
    CHECK_EQ_INT(memest_step_cfg_resolve_loss(&c, "huberloss", &err), 0);
    CHECK_EQ_INT(c.loss, MEMEST_LOSS_HUBER);

    memest_step_cfg_default(&c);   /* --loss none: the model's "loss" does not replace it */
    c.loss = MEMEST_LOSS_NONE;
    c.loss_set = true;
    CHECK_EQ_INT(memest_step_cfg_resolve_loss(&c, "mseloss", &err), 0);
    CHECK_EQ_INT(c.loss, MEMEST_LOSS_NONE);

    /* the builder accepts only known losses: anything else is memest's bug */
    memest_step_cfg_default(&c);
    CHECK_EQ_INT(memest_step_cfg_resolve_loss(&c, "bogus", &err), -1);
    CHECK_EQ_INT(err.code, MEMEST_ERR_INTERNAL);
    CHECK_EQ_INT(memest_error_exit(&err), 7);
}

static void test_check(void)
{
    static const struct {
        enum memest_optim kind;
        enum memest_optim_impl impl;
        bool ok;
    } cases[] = {
        {MEMEST_OPT_SGD, MEMEST_IMPL_FUSED, true},
        {MEMEST_OPT_ADAM, MEMEST_IMPL_FUSED, true},
        {MEMEST_OPT_ADAMW, MEMEST_IMPL_FUSED, true},
        {MEMEST_OPT_RMSPROP, MEMEST_IMPL_FUSED, false},
        {MEMEST_OPT_ADAGRAD, MEMEST_IMPL_FUSED, false},
        {MEMEST_OPT_ADAGRAD, MEMEST_IMPL_FOREACH, true},
        {MEMEST_OPT_RMSPROP, MEMEST_IMPL_FORLOOP, true},
        {MEMEST_OPT_ADAMW8BIT, MEMEST_IMPL_FUSED, false},   /* bitsandbytes' own kernel */
        {MEMEST_OPT_PAGED_ADAMW8BIT, MEMEST_IMPL_FOREACH, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct memest_step_cfg c;
        struct memest_error err = {0};
        memest_step_cfg_default(&c);
        c.optim.kind = cases[i].kind;
        c.impl = cases[i].impl;
        CHECK_EQ_INT(memest_step_cfg_check(&c, &err), cases[i].ok ? 0 : -1);
        CHECK_EQ_INT(err.code, cases[i].ok ? MEMEST_ERR_NONE : MEMEST_ERR_USAGE);
        if (!cases[i].ok)
            CHECK_CONTAINS(err.msg, memest_optim_name(cases[i].kind));
    }
}

/* The loss's shapes, by PyTorch's rules (LossNLL.cpp nll_loss_nd: input
 * (N, C) or (N, C, d1, ..., dk), target (N) or (N, d1, ..., dk) int64). */
static void test_loss_shapes(void)
{
    struct memest_shape seg, two, one, zero;
    int64_t s4[4] = {2, 5, 4, 4}, s2[2] = {8, 10}, s1[1] = {7};
    memest_shape_set(&seg, 4, s4);
    memest_shape_set(&two, 2, s2);
    memest_shape_set(&one, 1, s1);
    memest_shape_set(&zero, 0, NULL);
    struct memest_loss_shapes ls;
    struct memest_error err = {0};
    /* (2, 5, 4, 4), the default (0) and 1: 5 classes, target [2, 4, 4], 32 rows */
    for (int cd = 0; cd <= 1; cd++) {
        CHECK_EQ_INT(memest_loss_shapes(MEMEST_LOSS_CROSSENTROPY, cd, &seg, MEMEST_F32, &ls, &err), 0);
        CHECK(ls.class_index);
        CHECK_EQ_INT(ls.class_dim, 1);
        CHECK_EQ_INT(ls.classes, 5);
        CHECK_EQ_U64(ls.rows, 32);
        CHECK_EQ_INT(ls.target.ndim, 3);
        CHECK_EQ_INT(ls.target.size[0], 2);
        CHECK_EQ_INT(ls.target.size[1], 4);
        CHECK_EQ_INT(ls.target.size[2], 4);
        CHECK_EQ_INT(ls.target_dtype, MEMEST_I64);
    }
    /* class_dim -1: out.view(-1, 4), target [2*5*4 = 40] */
    CHECK_EQ_INT(memest_loss_shapes(MEMEST_LOSS_NLL, -1, &seg, MEMEST_F32, &ls, &err), 0);
    CHECK_EQ_INT(ls.class_dim, 3);
    CHECK_EQ_INT(ls.classes, 4);
    CHECK_EQ_U64(ls.rows, 40);
    CHECK_EQ_INT(ls.target.ndim, 1);
    CHECK_EQ_INT(ls.target.size[0], 40);
    /* (8, 10): the same either way */
    for (int cd = -1; cd <= 1; cd += 2) {
        CHECK_EQ_INT(memest_loss_shapes(MEMEST_LOSS_CROSSENTROPY, cd, &two, MEMEST_BF16, &ls, &err), 0);
        CHECK_EQ_INT(ls.class_dim, 1);
        CHECK_EQ_INT(ls.classes, 10);
        CHECK_EQ_U64(ls.rows, 8);
        CHECK_EQ_INT(ls.target.ndim, 1);
        CHECK_EQ_INT(ls.target.size[0], 8);
    }
    /* a 1-d output: no dim 1 (an error); class_dim -1: one row of 7 */
    CHECK_EQ_INT(memest_loss_shapes(MEMEST_LOSS_CROSSENTROPY, 1, &one, MEMEST_F32, &ls, &err), -1);
    CHECK_EQ_INT(err.code, MEMEST_ERR_SCHEMA);
    CHECK_STR_EQ(err.path, "loss.class_dim");
    err = (struct memest_error){0};
    CHECK_EQ_INT(memest_loss_shapes(MEMEST_LOSS_CROSSENTROPY, -1, &one, MEMEST_F32, &ls, &err), 0);
    CHECK_EQ_U64(ls.rows, 1);
    CHECK_EQ_INT(ls.classes, 7);
    CHECK_EQ_INT(memest_loss_shapes(MEMEST_LOSS_NLL, -1, &zero, MEMEST_F32, &ls, &err), -1);
    /* elementwise: a target of the output's shape and dtype, class_dim ignored */
    CHECK_EQ_INT(memest_loss_shapes(MEMEST_LOSS_MSE, -1, &seg, MEMEST_BF16, &ls, &err), 0);
    CHECK(!ls.class_index);
    CHECK(memest_shape_equal(&ls.target, &seg));
    CHECK_EQ_INT(ls.target_dtype, MEMEST_BF16);
    CHECK_EQ_U64(ls.rows, 160);
}

int main(void)
{
    test_loss_shapes();
    test_names();
    test_resolve_loss();
    test_check();
    return CHECK_DONE();
}
