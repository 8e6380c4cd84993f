/* memest_main.c - the memest command: parse the options, open the model
 * once, run one flow (one estimate, a sweep, the largest batch, or advice)
 * and return its exit code. The flows live in src/flow_*.c and src/advise.c
 * (app.h). In the core library, so that tests can run the whole command in
 * process (tests/oom/oom_test.c injects allocation failures this way). */
#include <stdio.h>

#include "memest/app.h"
#include "memest/cli.h"

int memest_main(int argc, char **argv)
{
    struct memest_cli o;
    struct memest_error err = {0};
    if (memest_cli_parse(argc, argv, &o, &err) != 0)
        return memest_app_fail(NULL, &err);
    if (o.help) {
        memest_cli_usage(stdout);
        return MEMEST_EXIT_OK;
    }
    if (o.list_ops) {
        memest_ops_print_markdown(stdout);
        return MEMEST_EXIT_OK;
    }
    if (o.list_gpus)
        return memest_flow_list_gpus();
    if (o.version) {
        printf("memest %s\n", MEMEST_VERSION);
        return MEMEST_EXIT_OK;
    }
    struct memest_app a;
    int rc = memest_app_open(&a, &o, &err);
    if (rc != MEMEST_EXIT_OK)
        rc = memest_app_fail(&o, &err);
    else if (o.sweep || o.sweep_var)
        rc = memest_flow_sweep(&a);
    else if (o.max_batch)
        rc = memest_flow_max_batch(&a);
    else if (o.advise)
        rc = memest_flow_advise(&a);
    else
        rc = memest_flow_single(&a);
    memest_app_close(&a);
    return rc;
}
