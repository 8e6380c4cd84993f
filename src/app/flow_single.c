/* flow_single.c - one estimate at --batch: its figures, the target card's
 * verdict and time estimate, --fit's exit code, and the CUDA probe (--probe,
 * also as the card with --gpu auto), handed to the report layer (report.h)
 * in the format asked for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/plot.h"
#include "memest/probe.h"
#include "memest/report.h"

static int probe(const struct memest_cli *o, const struct memest_graph *g,
                 const struct memest_estimate *e, const struct memest_alloc_conf *alloc,
                 struct memest_timeline *tl, struct memest_probe_result *res,
                 struct memest_error *err)
{
    memset(res, 0, sizeof *res);
    const char **names = malloc(sizeof *names * (g->nnodes ? g->nnodes : 1));
    if (!names) {
        res->no_memory = true;
        memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        return MEMEST_EXIT_RUNTIME;
    }
    for (uint32_t n = 0; n < g->nnodes; n++)
        names[n] = g->nodes[n].name;
    tl->node_names = names;
    struct memest_probe_config cfg = {.device = o->device, .have_predicted_context = true,
                                      .predicted_context = e->overhead,
                                      .pressure = !alloc->expandable, .alloc = alloc};
    int rc = memest_probe_run(&cfg, tl, res, err);
    tl->node_names = NULL;
    free(names);
    return rc;
}

/* --gpu auto: the probed device is the card; its preset (matched by the
 * driver's device name) gives the throughput figures. */
static void card_from_probe(struct memest_app *a, const struct memest_probe_result *p)
{
    if (!p->have_device || p->total == 0)
        return;
    const struct memest_gpu *g = memest_gpu_match_device(&a->gpus, p->device_name);
    a->card = (struct memest_card){MEMEST_CARD_PROBE, p->device_name, p->device_name, p->total, g};
    a->has_card = true;
    memest_app_card_usable(a);
}

int memest_flow_single(struct memest_app *a)
{
    const struct memest_cli *o = a->o;
    struct memest_error err = {0}, perr = {0};
    struct memest_timeline tl = {0}, itl = {0};   /* the training step's, --inference's */
    struct memest_estimate e;
    struct memest_probe_result pres;
    struct memest_card_report cr;
    struct memest_node_time *nodes = NULL;
    int rc = MEMEST_EXIT_OK;
    bool files = o->timeline_path || o->plot_path;
    /* the probe replays the allocator's segments of the step reported:
     * the no-grad pass's with --inference */
    tl.layout = itl.layout = o->probe;
    /* a timeline is kept only for the files and the probe that read it */
    bool keep = files || o->probe;
    if (memest_app_estimate_model(a, a->batch, &a->step, a->dtype, &e, keep && !o->inference ? &tl : NULL,
                            keep && o->inference ? &itl : NULL, &err) != 0 ||
        memest_write_step_files(o->timeline_path, o->plot_path, o->inference, a->est.r, &e,
                                o->inference ? &itl : &tl, &err) != 0 ||
        memest_app_stage_files(a, a->batch, &a->step, a->dtype, &e, &err) != 0) {
        rc = memest_app_fail(o, &err);
        goto end;
    }
    struct memest_report rep = {.opts = memest_app_report_opts(a), .step = &a->step, .g = a->est.g, .r = a->est.r, .e = &e,
                             .figs = a->est.figs, .nfigs = a->nstages, .binding = a->est.binding};
    if (o->probe) {
        rc = probe(o, a->est.g, &e, &a->step.alloc, o->inference ? &itl : &tl, &pres, &perr);
        rep.probe = &pres;
        if (rc != MEMEST_EXIT_OK && rc != MEMEST_EXIT_NOFIT) {
            rep.error = &perr;
            rep.error_exit = rc;
        }
        if (o->gpu && strcmp(o->gpu, "auto") == 0) {
            card_from_probe(a, &pres);
            /* the report's figures for the probed card's generation (the
             * probe replayed the timeline of an unknown one) */
            if (a->has_card && a->card.gpu &&
                (a->card.gpu->compute_capability != a->step.gpu_arch ||
                 a->card.gpu->nvswitch != a->step.nvswitch)) {
                a->step.gpu_arch = a->card.gpu->compute_capability;
                a->step.nvswitch = a->card.gpu->nvswitch;
                if (memest_app_estimate_model(a, a->batch, &a->step, a->dtype, &e, NULL, NULL,
                                        &err) != 0) {
                    rc = memest_app_fail(o, &err);
                    goto end;
                }
            }
        }
    }
    if (a->has_card) {
        nodes = calloc(a->est.g->nnodes ? a->est.g->nnodes : 1, sizeof *nodes);
        if (!nodes) {
            memest_errf(&err, MEMEST_ERR_NOMEM, NULL, "out of memory");
            rc = memest_app_fail(o, &err);
            goto end;
        }
        if (memest_app_card_report(a, &e, &a->step, a->dtype, &cr, nodes, &err) != 0) {
            rc = memest_app_fail(o, &err);
            goto end;
        }
        rep.card = &cr;
    }
    memest_render_estimate(stdout, o->format, &rep);
    if (o->probe && rc != MEMEST_EXIT_OK && rc != MEMEST_EXIT_NOFIT) {
        char msg[1200];
        memest_error_format(&perr, msg, sizeof msg);
        fprintf(stderr, "memest: %s\n", msg);
    }
    /* --fit: exit 1 when the step does not fit (the probe's own failures,
     * exit 4 or 5, take precedence) */
    if (o->fit && a->has_card && (rc == MEMEST_EXIT_OK || rc == MEMEST_EXIT_NOFIT) &&
        !cr.fit.fits)
        rc = MEMEST_EXIT_NOFIT;
end:
    free(nodes);
    memest_timeline_dispose(&tl);
    memest_timeline_dispose(&itl);
    return rc;
}
