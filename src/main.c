/* main.c - memest: read the model, infer shapes for the batch, run the
 * calculators, print the report (and optionally probe a real GPU). */
#include <stdio.h>
#include <stdlib.h>

#include "memest/calc.h"
#include "memest/cli.h"
#include "memest/model.h"
#include "memest/probe.h"
#include "memest/report.h"
#include "memest/run.h"

static int fail(const struct memest_cli *o, const struct memest_error *err)
{
    char msg[1200];
    memest_error_format(err, msg, sizeof msg);
    fprintf(stderr, "memest: %s\n", msg);
    if (err->code == MEMEST_ERR_USAGE)
        fprintf(stderr, "Use memest --help for help with command-line options.\n");
    if (o && o->json)
        memest_report_error_json(stdout, err);
    return memest_error_exit(err);
}

static int probe(const struct memest_cli *o, const struct memest_graph *g,
                 struct memest_timeline *tl, struct memest_probe_result *res,
                 struct memest_error *err)
{
    const char **names = malloc(sizeof *names * (g->nnodes ? g->nnodes : 1));
    if (!names) {
        memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        return MEMEST_EXIT_INTERNAL;
    }
    for (uint32_t n = 0; n < g->nnodes; n++)
        names[n] = g->nodes[n].name;
    tl->node_names = names;
    struct memest_probe_config cfg = {.device = o->device};
    int rc = memest_probe_run(&cfg, tl, res, err);
    tl->node_names = NULL;
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    struct memest_cli o;
    struct memest_error err = {0};
    if (memest_cli_parse(argc, argv, &o, &err) != 0)
        return fail(NULL, &err);
    if (o.help) {
        memest_cli_usage(stdout);
        return MEMEST_EXIT_OK;
    }
    if (o.list_ops) {
        memest_ops_print_markdown(stdout);
        return MEMEST_EXIT_OK;
    }
    if (o.version) {
        printf("memest %s\n", MEMEST_VERSION);
        return MEMEST_EXIT_OK;
    }
    struct memest_model m = {0};
    struct memest_graph g = {0};
    struct memest_run r = {0};
    struct memest_timeline tl = {0};
    struct memest_estimate e;
    struct memest_probe_result pres;
    int rc;
    struct memest_run_opts ro = {.batch = o.batch, .dtype = o.dtype};
    if (memest_model_read_file(o.model, &m, &err) != 0 ||
        memest_model_build(&m, o.sets, o.nsets, &g, &err) != 0 ||
        memest_run_infer(&r, &g, &ro, &err) != 0 || memest_estimate(&r, &o.step, &e, &tl, &err) != 0) {
        rc = fail(&o, &err);
        goto end;
    }
    struct memest_report rep = {.cli = &o, .g = &g, .r = &r, .e = &e};
    rc = MEMEST_EXIT_OK;
    struct memest_error perr = {0};
    if (o.probe) {
        rc = probe(&o, &g, &tl, &pres, &perr);
        rep.probe = &pres;
    }
    if (o.json)
        memest_report_json(stdout, &rep);
    else
        memest_report_text(stdout, &rep);
    if (o.probe) {
        if (!o.json)
            memest_probe_print_text(stdout, &pres);
        if (rc != MEMEST_EXIT_OK && rc != MEMEST_EXIT_NOFIT) {
            char msg[1200];
            memest_error_format(&perr, msg, sizeof msg);
            fprintf(stderr, "memest: %s\n", msg);
        }
    }
end:
    memest_timeline_dispose(&tl);
    memest_run_free(&r);
    memest_graph_free(&g);
    memest_model_free(&m);
    return rc;
}
