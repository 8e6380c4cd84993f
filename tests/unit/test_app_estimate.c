/* test_app_estimate.c - one estimate of the app (memest_app_estimate) runs
 * one shape inference: its run options carry the step's autocast (--amp)
 * from the first inference on, so memest_estimate_cost has nothing to infer
 * again (memest_run.infers counts them). The same with --pp, one inference
 * per estimate of a stage. And --amp bf16 --attention flash on a model in
 * float32 parameters estimates: autocast casts the attention's inputs to
 * bfloat16 before the kernel sees them (the first inference once ran
 * without it and refused the kernel). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "memest/app.h"
#include "memest/cli.h"

#define TINY "tests/hf/tiny/llama.json"

/* The shape inferences run so far into the model's run and the stages'. */
static long long infers(const struct memest_app *a)
{
    long long n = a->est.run.infers;
    for (int64_t s = 0; s < a->nstages; s++)
        n += a->est.stage_runs[s].infers;
    return n;
}

/* The inferences one memest_app_estimate_model of the command `args` runs (the
 * run of the whole model, or of every stage with --pp); -1 when the command
 * does not open or estimate. */
static long long inferences(const char *const *args, int nargs)
{
    char *argv[16] = {"memest"};
    for (int i = 0; i < nargs && i < 15; i++)
        argv[i + 1] = (char *)args[i];
    struct memest_cli o;
    struct memest_error err = {0};
    if (memest_cli_parse(nargs + 1, argv, &o, &err) != 0) {
        fprintf(stderr, "parse: %s\n", err.msg);
        return -1;
    }
    struct memest_app a;
    long long n = -1;
    if (memest_app_open(&a, &o, &err) == MEMEST_EXIT_OK) {
        long long before = infers(&a);
        struct memest_estimate e;
        if (memest_app_estimate_model(&a, a.batch, &a.step, a.dtype, &e, NULL, NULL, &err) == 0)
            n = infers(&a) - before;
    }
    if (n < 0)
        fprintf(stderr, "%s: %s\n", args[0], err.msg);
    memest_app_close(&a);
    return n;
}

int main(void)
{
    const char *plain[] = {TINY};
    const char *amp[] = {TINY, "--amp", "bf16"};
    const char *fp16[] = {TINY, "--amp", "fp16", "--batch", "3"};
    const char *flash[] = {TINY, "--amp", "bf16", "--attention", "flash"};
    CHECK_EQ_INT(inferences(plain, 1), 1);
    CHECK_EQ_INT(inferences(amp, 3), 1);
    CHECK_EQ_INT(inferences(fp16, 5), 1);
    CHECK_EQ_INT(inferences(flash, 5), 1);
    /* --pp 2: the tiny llama's two layers, one a stage; each stage is
     * estimated, then again with the other micro-batches' activations it
     * holds (the first stage holds 2 of them: min(P - s, M) = 2, the
     * second 1), then the binding stage once more: 2 + 1 + 1 = 4 when the
     * first binds, 2 + 1 + 1 = 4 when the second does */
    const char *pp[] = {TINY, "--amp", "bf16", "--gpus", "2", "--pp", "2"};
    CHECK_EQ_INT(inferences(pp, 7), 4);
    return CHECK_DONE();
}
