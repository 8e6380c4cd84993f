/* report_json.c - the --json document of one estimate (and of --max-batch)
 * and the error document; README.md documents every field. */
#include "memest/checked.h"
#include "memest/format.h"
#include "memest/ops.h"
#include "memest/jsonw.h"
#include "memest/report.h"
#include "memest/step.h"

/* The step under memory pressure (calc.h: memest_pressure): the least
 * memory it runs in, the allocator's settings, and its replay on the card. */
static void pressure_fields(struct memest_jsonw *w, const struct memest_step_cfg *step,
                            const struct memest_pressure *pr, uint64_t overhead)
{
    if (pr->searched) {
        memest_jsonw_u64(w, "least_device_memory", memest_sat_add(pr->least, overhead));
        memest_jsonw_u64(w, "least_allocator_memory", pr->least);
    } else {
        memest_jsonw_null(w, "least_device_memory");
        memest_jsonw_null(w, "least_allocator_memory");
    }
    memest_jsonw_str(w, "allocator_conf", step ? step->alloc.text : "");
    memest_jsonw_obj_begin(w, "pressure");
    memest_jsonw_bool(w, "least_exact", pr->searched && pr->least_exact);
    memest_jsonw_u64(w, "replays", pr->replays);
    if (pr->judged) {
        memest_jsonw_obj_begin(w, "on_card");
        memest_jsonw_u64(w, "capacity", pr->capacity);
        memest_jsonw_bool(w, "completes", pr->completes);
        memest_jsonw_u64(w, "reserved", pr->reserved);
        memest_jsonw_u64(w, "retries", pr->retries);
        memest_jsonw_u64(w, "released", pr->released);
        memest_jsonw_obj_end(w);
    } else {
        memest_jsonw_null(w, "on_card");
    }
    memest_jsonw_obj_end(w);
}

static const char *node_name(const struct memest_report *rep, uint32_t node)
{
    return node < rep->g->nnodes ? rep->g->nodes[node].name : NULL;
}

static void at_peak_obj(struct memest_jsonw *w, const struct memest_peak *p)
{
    memest_jsonw_obj_begin(w, "at_peak");
    for (int c = 0; c < MEMEST_CAT_COUNT; c++)
        if (c != MEMEST_CAT_COMM || p->at_peak[c])   /* several GPUs only */
            memest_jsonw_u64(w, memest_category_name((enum memest_category)c), p->at_peak[c]);
    memest_jsonw_obj_end(w);
}

static void peak_obj(struct memest_jsonw *w, const char *key, const struct memest_report *rep,
                     const struct memest_peak *p, uint64_t total_device)
{
    memest_jsonw_obj_begin(w, key);
    memest_jsonw_u64(w, "bytes", p->bytes);
    memest_jsonw_u64(w, "tensor_bytes", p->tensor_bytes);
    memest_jsonw_u64(w, "reserved", p->reserved);
    memest_jsonw_u64(w, "total_device", total_device);
    memest_jsonw_str(w, "phase", memest_phase_name((enum memest_phase)p->phase));
    memest_jsonw_str(w, "node", node_name(rep, p->node));
    at_peak_obj(w, p);
    memest_jsonw_obj_end(w);
}

/* "step": how the simulated step runs. */
/* --lora: the options, what the pass adapted, and PEFT's counts */
static void lora_obj(struct memest_jsonw *w, const struct memest_lora_summary *l,
                     const struct memest_param_totals *p)
{
    char line[128];
    memest_jsonw_obj_begin(w, "lora");
    memest_jsonw_i64(w, "r", l->opts.r);
    memest_jsonw_f64(w, "alpha", l->opts.alpha);
    memest_jsonw_f64(w, "dropout", l->opts.dropout);
    memest_jsonw_bool(w, "rslora", l->opts.rslora);
    memest_jsonw_f64(w, "scaling", l->scaling);
    memest_jsonw_str(w, "targets", l->targets);
    memest_jsonw_u64(w, "modules", l->modules);
    memest_jsonw_u64(w, "bnb_modules", l->bnb_modules);
    memest_jsonw_u64(w, "trainable_params", p->trainable);
    memest_jsonw_u64(w, "all_params", p->total);
    memest_jsonw_str(w, "print_trainable_parameters", memest_lora_text(line, sizeof line, p));
    memest_jsonw_obj_end(w);
}

/* A folder's safetensors checkpoint (safetensors.h), checked against the model */
static void checkpoint_obj(struct memest_jsonw *w, const struct memest_ckpt *c)
{
    const struct memest_ckpt_match *m = &c->match;
    memest_jsonw_obj_begin(w, "safetensors");
    memest_jsonw_str(w, "index", c->index);
    memest_jsonw_u64(w, "files", c->nfiles);
    memest_jsonw_u64(w, "tensors", c->ntensors);
    memest_jsonw_u64(w, "bytes", c->bytes);
    memest_jsonw_obj_begin(w, "bytes_by_dtype");
    for (int d = 0; d < MEMEST_CK_COUNT; d++)
        if (c->dtype_bytes[d])
            memest_jsonw_u64(w, memest_ckpt_dtype_name((enum memest_ckpt_dtype)d),
                             c->dtype_bytes[d]);
    memest_jsonw_obj_end(w);
    memest_jsonw_str(w, "dtype", c->has_dtype ? memest_dtype_name(c->dtype) : NULL);
    memest_jsonw_str(w, "format", memest_wformat_name((enum memest_wformat)m->format));
    memest_jsonw_u64(w, "quantized_bytes", m->quant_bytes);
    memest_jsonw_u64(w, "quantized_model_bytes", m->quant_model_bytes);
    memest_jsonw_u64(w, "matched", m->matched);
    memest_jsonw_u64(w, "stacked", m->stacked);
    memest_jsonw_u64(w, "ignored", m->ignored);
    memest_jsonw_str(w, "prefix", m->prefix[0] ? m->prefix : NULL);
    memest_jsonw_bool(w, "matches", m->checked);
    memest_jsonw_obj_end(w);
}

static void step_obj(struct memest_jsonw *w, const struct memest_report *rep)
{
    const struct memest_step_cfg *s = rep->step;
    memest_jsonw_obj_begin(w, "step");
    memest_jsonw_str(w, "kind", rep->opts.inference ? "inference" : "training");
    memest_jsonw_str(w, "optim_impl", memest_optim_impl_label(s));
    memest_jsonw_bool(w, "first_step", s->first_step);
    enum memest_zero_grad z = s->zero_grad_zeros ? MEMEST_ZERO_GRAD_ZEROS : MEMEST_ZERO_GRAD_NONE;
    memest_jsonw_str(w, "zero_grad", memest_zero_grad_name(z));
    memest_jsonw_i64(w, "grad_accum", s->grad_accum);
    memest_jsonw_str(w, "amp", memest_amp_name(s->amp));
    memest_jsonw_bool(w, "checkpoint", s->checkpoint);
    if (s->checkpoint) {
        memest_jsonw_str(w, "checkpoint_policy", memest_ckpt_policy_name(s->checkpoint_policy));
        memest_jsonw_i64(w, "checkpoint_every", s->checkpoint_every ? s->checkpoint_every : 1);
        memest_jsonw_bool(w, "checkpoint_reentrant", !memest_ckpt_nonreentrant(s));
        memest_jsonw_bool(w, "checkpoint_early_stop", memest_ckpt_early_stop(s));
    }
    memest_jsonw_str(w, "loss", memest_loss_name(s->loss));
    memest_jsonw_str(w, "loop", memest_loop_name((enum memest_loop)s->loop));
    memest_jsonw_obj_end(w);
}

/* The "error" member: {code, exit, message, file, path, node[, line, col]}. */
static void error_obj(struct memest_jsonw *w, const struct memest_error *err, int exit_code)
{
    char msg[1200];
    memest_error_format(err, msg, sizeof msg);
    memest_jsonw_obj_begin(w, "error");
    memest_jsonw_str(w, "code", memest_errcode_name(err->code));
    memest_jsonw_u64(w, "exit", (uint64_t)exit_code);
    memest_jsonw_str(w, "message", msg);
    memest_jsonw_str(w, "file", err->file[0] ? err->file : NULL);
    memest_jsonw_str(w, "path", err->path[0] ? err->path : NULL);
    memest_jsonw_str(w, "node", err->node[0] ? err->node : NULL);
    if (err->line)
        memest_jsonw_i64(w, "line", err->line), memest_jsonw_i64(w, "col", err->col);
    memest_jsonw_obj_end(w);
}

static void shape_arr(struct memest_jsonw *w, const char *key, const struct memest_shape *s)
{
    memest_jsonw_arr_begin(w, key);
    for (int d = 0; d < s->ndim; d++)
        memest_jsonw_i64(w, NULL, s->size[d]);
    memest_jsonw_arr_end(w);
}

/* With --layers, the layers end with the loss's entry (report.h):
 * what it reads, its target and its 0-d output. */
static void loss_layer(struct memest_jsonw *w, const struct memest_report *rep)
{
    struct memest_loss_shapes ls;
    const struct memest_value *in;
    if (!memest_calc_loss(rep->g, rep->r, rep->step, rep->opts.inference, &ls, &in))
        return;
    struct memest_shape scalar = {.ndim = 0};
    memest_jsonw_obj_begin(w, NULL);
    memest_jsonw_str(w, "name", "loss");
    memest_jsonw_str(w, "type", memest_loss_name(rep->step->loss));
    shape_arr(w, "input_shape", &in->shape);
    memest_jsonw_str(w, "input_dtype", memest_dtype_name((enum memest_dtype)in->dtype));
    if (ls.class_index)
        memest_jsonw_i64(w, "class_dim", ls.class_dim);
    else
        memest_jsonw_null(w, "class_dim");
    shape_arr(w, "target_shape", &ls.target);
    memest_jsonw_str(w, "target_dtype", memest_dtype_name(ls.target_dtype));
    shape_arr(w, "output_shape", &scalar);
    memest_jsonw_u64(w, "params", 0);
    memest_jsonw_count(w, "forward_macs", 0);
    memest_jsonw_obj_end(w);
}

/* What lives outside the device memory, each only where it arises so that
 * other documents keep their keys: bitsandbytes' paged state (unified
 * memory, not in the peak) and --activation-offload's host copies. */
static void host_fields(struct memest_jsonw *w, const struct memest_report *rep)
{
    const struct memest_estimate *e = rep->e;
    if (memest_optim_desc(rep->step->optim.kind)->paged)
        memest_jsonw_u64(w, "optimizer_state_paged", e->opt.paged_bytes);
    if (rep->step->act_offload) {   /* torchtune's OffloadActivations */
        memest_jsonw_u64(w, "activations_host", e->train_peak.offload_host);
        memest_jsonw_u64(w, "activations_to_host", e->train_peak.offload_d2h);
        memest_jsonw_u64(w, "activations_from_host", e->train_peak.offload_h2d);
    }
}

/* Outside the allocator: the CUDA context and NCCL's communicators, and
 * what nvidia-smi would show. */
static void device_fields(struct memest_jsonw *w, const struct memest_estimate *e, bool inf)
{
    memest_jsonw_u64(w, "overhead", e->overhead);
    memest_jsonw_u64(w, "nccl", e->nccl.total);
    memest_jsonw_u64(w, "total_device", inf ? e->infer_total_device : e->total_device);
}

void memest_report_json(FILE *f, const struct memest_report *rep)
{
    const struct memest_estimate *e = rep->e;
    const struct memest_run *r = rep->r;
    const struct memest_graph *g = rep->g;
    struct memest_jsonw w;
    memest_jsonw_init(&w, f, true);
    memest_jsonw_obj_begin(&w, NULL);
    memest_jsonw_u64(&w, "schema_version", MEMEST_SCHEMA_VERSION);
    if (rep->max_batch) {
        memest_jsonw_i64(&w, "max_batch", rep->max_batch->mb.best);
        memest_jsonw_i64(&w, "max_batch_steady", rep->max_batch->mb.steady);
    }
    memest_jsonw_str(&w, "model", g->name);
    memest_jsonw_str(&w, "file", g->file);
    memest_jsonw_i64(&w, "batch", r->opts.batch);
    memest_jsonw_str(&w, "optimizer", memest_optim_name(rep->step->optim.kind));
    memest_jsonw_f64(&w, "momentum", rep->step->optim.momentum);
    memest_jsonw_str(&w, "dtype", memest_dtype_name(rep->opts.dtype));
    enum memest_wformat wf;
    uint32_t nq = memest_graph_quantized(g, &wf);
    if (nq) {   /* --weights or a config's quantization_config: quant.h */
        const struct memest_quant_params *qp = &g->quant;
        memest_jsonw_obj_begin(&w, "weights");
        memest_jsonw_str(&w, "format", memest_wformat_name(wf));
        memest_jsonw_u64(&w, "layers", nq);
        if (memest_wformat_bnb4(wf)) {
            memest_jsonw_i64(&w, "blocksize", qp->blocksize);
            memest_jsonw_bool(&w, "double_quant", qp->double_quant);
            enum memest_dtype cd = qp->compute_dtype ? (enum memest_dtype)(qp->compute_dtype - 1)
                                                     : MEMEST_F32;   /* the config's default */
            memest_jsonw_str(&w, "compute_dtype", memest_dtype_name(cd));
        } else if (wf == MEMEST_WF_GPTQ4 || wf == MEMEST_WF_AWQ4) {
            memest_jsonw_i64(&w, "group_size", qp->group_size);
        }
        memest_jsonw_obj_end(&w);
    }
    if (r->used & MEMEST_USED_RNN)   /* only with recurrent layers */
        memest_jsonw_str(&w, "rnn_kernel", memest_rnn_kernel_name(r->opts.rnn_kernel));
    step_obj(&w, rep);

    memest_jsonw_obj_begin(&w, "params");
    memest_jsonw_u64(&w, "total", e->params.total);
    memest_jsonw_u64(&w, "trainable", e->params.trainable);
    memest_jsonw_u64(&w, "frozen", e->params.frozen);
    memest_jsonw_u64(&w, "active", e->params.active);
    memest_jsonw_u64(&w, "tensors", e->params.tensors);
    memest_jsonw_u64(&w, "buffers", e->params.buffer_elems);
    memest_jsonw_u64(&w, "buffer_tensors", e->params.buffer_tensors);
    memest_jsonw_obj_end(&w);
    if (rep->opts.lora)
        lora_obj(&w, rep->opts.lora, &e->params);
    if (rep->opts.checkpoint)
        checkpoint_obj(&w, rep->opts.checkpoint);
    memest_dist_json(&w, rep);

    memest_jsonw_obj_begin(&w, "memory");
    memest_jsonw_u64(&w, "parameters", e->params.bytes);
    memest_jsonw_u64(&w, "buffers", e->params.buffer_bytes);
    memest_jsonw_u64(&w, "gradients", e->gradients);
    memest_jsonw_u64(&w, "optimizer_state", e->opt.device_bytes);
    memest_jsonw_u64(&w, "optimizer_state_host", e->opt.host_bytes);
    host_fields(&w, rep);
    memest_jsonw_u64(&w, "activations", e->activations);
    memest_jsonw_u64(&w, "saved_at_backward", e->train_peak.bwd_saved);
    /* the step reported (training, or inference with --inference): the
     * allocator's allocated peak, the exact tensor bytes, reserved, the
     * device overhead and what nvidia-smi would show */
    bool inf = rep->opts.inference;
    const struct memest_peak *p = inf ? &e->infer_peak : &e->train_peak;
    memest_jsonw_u64(&w, "peak", p->bytes);
    memest_jsonw_u64(&w, "peak_tensors", p->tensor_bytes);
    memest_jsonw_u64(&w, "reserved", p->reserved);
    device_fields(&w, e, inf);
    pressure_fields(&w, rep->step, inf ? &e->infer_pressure : &e->pressure, e->overhead);
    memest_jsonw_str(&w, "peak_phase", memest_phase_name((enum memest_phase)p->phase));
    memest_jsonw_str(&w, "peak_node", node_name(rep, p->node));
    at_peak_obj(&w, p);
    memest_jsonw_u64(&w, "inference_peak", e->infer_peak.bytes);
    peak_obj(&w, "train_peak", rep, &e->train_peak, e->total_device);
    peak_obj(&w, "inference", rep, &e->infer_peak, e->infer_total_device);
    memest_jsonw_obj_end(&w);

    memest_jsonw_obj_begin(&w, "flops");
    memest_jsonw_count(&w, "forward_macs", e->flops.fwd_macs);
    memest_jsonw_count(&w, "backward_macs", e->flops.bwd_macs);
    memest_jsonw_count(&w, "forward", e->flops.fwd_flops);
    memest_jsonw_count(&w, "backward", e->flops.bwd_flops);
    memest_jsonw_count(&w, "step", e->flops.step_flops);
    memest_jsonw_count(&w, "optimizer_macs", e->flops.optim_macs);
    memest_jsonw_count(&w, "optimizer", e->flops.optim_flops);
    memest_jsonw_obj_end(&w);

    if (rep->probe)
        memest_probe_json(&w, rep->probe);
    if (rep->card)
        memest_card_json(&w, rep->card);

    memest_jsonw_arr_begin(&w, "layers");
    for (uint32_t n = 0; n < g->nnodes; n++) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        const struct memest_shape *s = &r->values[ni->out_first].shape;
        memest_jsonw_obj_begin(&w, NULL);
        memest_jsonw_str(&w, "name", g->nodes[n].name);
        memest_jsonw_str(&w, "type", g->nodes[n].op->name);
        shape_arr(&w, "output_shape", s);
        memest_jsonw_u64(&w, "params", memest_node_params(r, n));
        memest_jsonw_u64(&w, "activation_bytes", ni->act_bytes);
        memest_jsonw_count(&w, "forward_macs", ni->fwd_macs);
        memest_jsonw_obj_end(&w);
    }
    if (rep->opts.layers)
        loss_layer(&w, rep);
    memest_jsonw_arr_end(&w);
    if (rep->error)
        error_obj(&w, rep->error, rep->error_exit);
    memest_jsonw_obj_end(&w);
    memest_jsonw_finish(&w);
}

void memest_error_json(FILE *f, const struct memest_error *err)
{
    struct memest_jsonw w;
    memest_jsonw_init(&w, f, true);
    memest_jsonw_obj_begin(&w, NULL);
    memest_jsonw_u64(&w, "schema_version", MEMEST_SCHEMA_VERSION);
    error_obj(&w, err, memest_error_exit(err));
    memest_jsonw_obj_end(&w);
    memest_jsonw_finish(&w);
}
