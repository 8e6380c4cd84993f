/* test_cli_checks.c - the command line refuses what it cannot mean
 * (src/app/cli.c, cli_dist.c) and the layouts that cannot exist
 * (src/step/dist.c memest_dist_check, which a config file's layout meets
 * too); the model variables the several-GPU options set
 * (memest_cli_dist_sets). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "memest/cli.h"
#include "memest/dist.h"

/* memest_cli_parse of "memest ARGS m.json" (ARGS split at spaces). */
static int parse(const char *args, struct memest_cli *o, struct memest_error *err)
{
    static char buf[512];
    char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "memest %s m.json", args);
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    memset(err, 0, sizeof *err);
    return memest_cli_parse(argc, argv, o, err);
}

static void test_refused(void)
{
    static const struct {
        const char *args, *msg;   /* msg NULL: accepted */
    } cases[] = {
        {"--new-tokens 8", "--new-tokens is for memest generate (--generate), not an estimate"},
        {"--gpu-util 0.5", "--gpu-util is vLLM's: it needs --kv-block B"},
        {"--generate --context 8 --gpu-util 0.5", "it needs --kv-block B"},
        {"--generate --context 8 --gpu-util 0.5 --kv-block 16 --mem 1GiB", NULL},
        {"--device 1", "--device needs --probe"},
        {"--device 1 --probe", NULL},
        {"--headroom 3", "--headroom needs a target card"},
        {"--headroom 3 --mem 1GiB", NULL},
        {"--mfu 0.3 --mem 1GiB", "--mfu needs a card preset's peak FLOP/s"},
        {"--mfu 0.3 --gpu t4", NULL},
        {"--gpus 2 --micro-batches 2", "--micro-batches is the pipeline's: it needs --pp 2"},
        {"--gpus 2 --schedule 1f1b", "--schedule is the pipeline's"},
        {"--gpus 2 --virtual-stages 2", "--virtual-stages is the pipeline's"},
        {"--gpus 2 --pp 2 --virtual-stages 1", "--virtual-stages needs --schedule interleaved"},
        {"--gpus 2 --pp 2 --schedule interleaved", "needs --virtual-stages V of 2 or more"},
        {"--gpus 2 --pp 2 --schedule interleaved --virtual-stages 2", NULL},
        {"--gpus 2 --pp 2 --grad-accum 2", "--grad-accum with --pp"},
        {"--gpus 4 --gpus-per-node 3 --strategy hsdp", "4 GPUs are not whole nodes of 3"},
        {"--gpus 12 --strategy hsdp", "not whole nodes of 8 (--gpus-per-node's default)"},
        {"--gpus 16 --tp 16 --strategy hsdp", "holds no whole model-parallel group"},
        {"--gpus 16 --tp 2 --strategy hsdp", NULL},
        {"--gpus 8 --gpus-per-node 4", "--gpus-per-node sets the shard group of --strategy hsdp"},
        {"--gpus 8 --gpus-per-node 4 --gpu t4,l4", NULL},   /* a comparison counts nodes */
        {"--gpus 8 --gpus-per-node 4 --strategy hsdp", NULL},
        {"--set tp=2", "--set tp=2: tp is the tensor-parallel size"},
        {"--set sp=1", "--set sp=1: sp is the sequence-parallel size"},
        {"--set ep=2", "--set ep=2: ep is the expert-parallel size"},
        {"--sweep-var tp=1,2", "--sweep-var tp: tp is the tensor-parallel size"},
        {"--set width=1 --set width=2", "width is set twice, by --set width=1 and by --set width=2"},
        {"--seq 8 --set seq_len=9", "seq_len is set twice, by --seq 8 and by --set seq_len=9"},
        {"--sweep-var width=1,2 --set width=3", "--sweep-var width gives the variable's values"},
        {"--gpus 2 --cp 2 --seq 8 --sweep-var seq_len=8,16", "--sweep-var seq_len with --cp"},
        {"--inference --optim sgd", "--optim is the training step's: --inference"},
        {"--inference --zero-grad zeros", "--zero-grad is the training step's"},
        {"--inference --fused linear-ce", "--fused linear-ce is the training step's"},
        {"--inference --fused all", NULL},
        {"--inference --fused rmsnorm", NULL},
        {"--generate --context 8 --checkpoint", "--checkpoint is the training step's: --generate"},
        {"--generate --context 8 --max-context --mem 1GiB", "--max-context searches the prompt's"},
        {"--generate --max-context --mem 1GiB", NULL},
        {"--generate --context 8 --batch 2 --max-batch --mem 1GiB", "excludes --batch"},
        {"--batch 2 --max-batch --mem 1GiB", "--max-batch searches the batch size"},
        {"--batch 2 --sweep 1,2", "--sweep gives the batch sizes"},
        {"--batch 2 --sweep-var width=1,2", NULL},
        {"--momentum 0", "--momentum applies to"},
        {"--optim sgd --momentum 0", NULL},
        /* the subcommands: the same rows, the mode named instead of flagged */
        {"fit --gpu t4", NULL},
        {"fit", "memest fit needs a target card"},
        {"fit --gpu all", "--gpu all compares cards: it is for memest compare, not memest fit"},
        {"compare", NULL},
        {"compare --gpu t4", "memest compare compares cards"},
        {"sweep --sweep 1,2", NULL},
        {"sweep", "memest sweep needs the batch sizes"},
        {"max-batch --mem 1GiB", NULL},
        {"max-batch --mem 1GiB --batch 2", "--max-batch searches the batch size"},
        {"advise --mem 1GiB --sweep 1,2", "--sweep is for memest sweep (--sweep or --sweep-var), "
                                          "not memest advise"},
        {"generate --context 8", NULL},
        {"generate --context 8 --max-batch --mem 1GiB", NULL},
        {"estimate --fit --gpu t4", "--fit is for memest fit or advise, not memest estimate"},
        {"--fit --max-batch --gpu t4", "--max-batch and --fit exclude each other"},
        {"--layers --sweep 1,2", "--layers is for memest estimate, max-batch or fit, not a sweep "
                                 "(--sweep)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct memest_cli o;
        struct memest_error err;
        int rc = parse(cases[i].args, &o, &err);
        if (!cases[i].msg) {
            CHECK_EQ_INT(rc, 0);
            if (rc != 0)
                fprintf(stderr, "  %s: %s\n", cases[i].args, err.msg);
            continue;
        }
        CHECK_EQ_INT(rc, -1);
        CHECK_EQ_INT(err.code, MEMEST_ERR_USAGE);
        CHECK_CONTAINS(err.msg, cases[i].msg);
    }
}

/* A subcommand and its flag make the same options: the mode and the
 * flags the flows read. */
static void test_subcommands(void)
{
    static const struct {
        const char *sub, *flag;
    } pairs[] = {
        {"fit --gpu t4", "--fit --gpu t4"},
        {"max-batch --gpu t4", "--max-batch --gpu t4"},
        {"advise --gpu t4", "--advise --gpu t4"},
        {"generate --context 8", "--generate --context 8"},
        {"compare", "--gpu all"},
        {"sweep --sweep 1,2", "--sweep 1,2"},
        {"estimate --batch 3", "--batch 3"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        struct memest_cli a, b;
        struct memest_error err;
        CHECK_EQ_INT(parse(pairs[i].sub, &a, &err), 0);
        CHECK_EQ_INT(parse(pairs[i].flag, &b, &err), 0);
        CHECK_EQ_INT(a.mode, b.mode);
        CHECK_EQ_INT(a.fit, b.fit);
        CHECK_EQ_INT(a.max_batch, b.max_batch);
        CHECK_EQ_INT(a.advise, b.advise);
        CHECK_EQ_INT(a.generate, b.generate);
        CHECK_EQ_INT(a.compare, b.compare);
        CHECK_EQ_INT(a.sweep != NULL, b.sweep != NULL);
        CHECK_EQ_INT(a.batch, b.batch);
    }
    /* memest sweep MODEL LIST: the LIST an operand */
    char a0[] = "memest", a1[] = "sweep", a2[] = "m.json", a3[] = "1:8:x2";
    char *argv[] = {a0, a1, a2, a3, NULL};
    struct memest_cli o;
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_cli_parse(4, argv, &o, &err), 0);
    CHECK(o.sweep && strcmp(o.sweep, "1:8:x2") == 0);
    CHECK(o.model && strcmp(o.model, "m.json") == 0);
}

/* A layout as a config file makes it (no option flags): the same checks. */
static void test_dist_check(void)
{
    struct memest_dist_cfg c;
    struct memest_error err = {0};
    memest_dist_default(&c);
    c.set = true;
    c.gpus = 6;
    c.gpus_per_node = 4;   /* from num_machines, not --gpus-per-node */
    c.strategy = MEMEST_STRAT_HSDP;
    CHECK(memest_dist_check(&c, &err) != 0);
    CHECK_CONTAINS(err.msg, "6 GPUs are not whole nodes of 4;");
    c.gpus = 8;
    memset(&err, 0, sizeof err);
    CHECK(memest_dist_check(&c, &err) == 0);
    c.strategy = MEMEST_STRAT_FSDP;   /* the machines of a FULL_SHARD file: no flag, accepted */
    CHECK(memest_dist_check(&c, &err) == 0);
    c.gpus_per_node_set = true;       /* given on the command line: changes nothing */
    CHECK(memest_dist_check(&c, &err) != 0);
    CHECK_CONTAINS(err.msg, "with --strategy fsdp it changes nothing");
    c.gpus_per_node_set = false;
    memset(&err, 0, sizeof err);
    c.eng.ddp_grad_as_bucket_view = true;   /* from the command line, the engine from a file */
    CHECK(memest_dist_check(&c, &err) != 0);
    CHECK_CONTAINS(err.msg, "--ddp-bucket-view needs --strategy ddp");
    c.eng.ddp_grad_as_bucket_view = false;
    c.strategy = MEMEST_STRAT_ZERO2;
    c.ep = 2;
    memset(&err, 0, sizeof err);
    CHECK(memest_dist_check(&c, &err) != 0);
    CHECK_CONTAINS(err.msg, "--ep with --strategy zero2 is not modelled");
}

static void test_dist_sets(void)
{
    struct memest_cli o;
    struct memest_error err;
    CHECK(parse("--gpus 8 --tp 2 --sequence-parallel --cp 2 --ep 2 --seq 64", &o, &err) == 0);
    struct memest_override sets[MEMEST_MAX_SETS + MEMEST_DIST_VARS];
    struct memest_dist_vars dv;
    memcpy(sets, o.sets, sizeof *sets * (size_t)o.nsets);
    int n = memest_cli_dist_sets(&o, sets, o.nsets, &dv, &err);
    CHECK_EQ_INT(n, 4);
    const char *want[][3] = {{"seq_len", "32", "--seq"}, {"ep", "2", "--ep"}, {"tp", "2", "--tp"},
                             {"sp", "2", "--sequence-parallel"}};
    for (int i = 0; i < 4 && i < n; i++) {
        CHECK_STR_EQ(sets[i].name, want[i][0]);
        CHECK_STR_EQ(sets[i].value, want[i][1]);
        CHECK_STR_EQ(sets[i].opt, want[i][2]);
    }
    CHECK(parse("--gpus 8 --cp 2 --seq 63", &o, &err) == 0);
    memcpy(sets, o.sets, sizeof *sets * (size_t)o.nsets);
    CHECK(memest_cli_dist_sets(&o, sets, o.nsets, &dv, &err) < 0);
    CHECK_CONTAINS(err.msg, "--cp 2 needs --seq S (a multiple of it)");
}

int main(void)
{
    test_refused();
    test_subcommands();
    test_dist_check();
    test_dist_sets();
    return CHECK_DONE();
}
