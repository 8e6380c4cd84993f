/* cli_stack.c - the variables a template reads about the stack around the
 * model (cli.h: memest_cli_stack_sets): the transformers release
 * (--transformers, default 5.x), the PyTorch release (--torch: 206 for 2.x,
 * whose rules memest follows at 2.6, or 113), whether the model computes its own loss from labels
 * (--loop), and whether its forward builds a DynamicCache (use_cache, off
 * under gradient checkpointing and in generation, whose cache memest
 * replays itself), and whether the loop runs its own model code
 * (torchtune's, torchtitan's) rather than transformers'. A model that
 * declares none of them is built as before. */
#include <stdio.h>

#include "memest/cli.h"
#include "memest/model.h"

/* step: the app's, whose checkpointing includes what a config turns on
 * (--fsdp-config's activation_checkpointing) */
static bool checkpointing(const struct memest_step_cfg *step)
{
    return step->checkpoint || step->ncheckpoint_names > 0;
}

int memest_cli_stack_sets(const struct memest_cli *o, const struct memest_model *m,
                          const struct memest_step_cfg *step, struct memest_override *sets, int n,
                          struct memest_stack_vars *buf)
{
    bool training = !o->inference && !o->generate;
    enum memest_loop loop = (enum memest_loop)step->loop;
    bool labels = training && memest_loop_labels(loop) &&
                  !(o->step.loss_set && o->step.loss == MEMEST_LOSS_NONE);
    /* PreTrainedModel: `if self.gradient_checkpointing and self.training and
     * use_cache: use_cache = False` (LlamaModel.forward, v4.48 to v5) */
    /* torchtune's and torchtitan's loops run their own model code, which
     * builds no DynamicCache (as they pass no labels) */
    bool cache = !o->generate && !(training && (checkpointing(step) || !memest_loop_labels(loop)));
    snprintf(buf->transformers, sizeof buf->transformers, "%u",
             o->transformers ? (unsigned)o->transformers : 500u);
    snprintf(buf->torch, sizeof buf->torch, "%u",
             o->run.torch ? (unsigned)o->run.torch : 206u);
    const struct memest_override all[MEMEST_STACK_VARS] = {
        {"transformers", buf->transformers, "--transformers"},
        {"torch", buf->torch, "--torch"},
        {"labels", labels ? "true" : "false", "--loop"},
        {"forward_cache", cache ? "true" : "false", "--checkpoint"},
        {"native_model", !training ? "0" : loop == MEMEST_LOOP_TORCHTUNE ? "1"
                                   : loop == MEMEST_LOOP_TORCHTITAN  ? "2" : "0", "--loop"},
    };
    buf->n = 0;
    for (int i = 0; i < MEMEST_STACK_VARS; i++)
        if (memest_model_has_variable(m, all[i].name, NULL))
            sets[n + buf->n++] = all[i];
    return n + buf->n;
}

int memest_cli_stack_check(const struct memest_cli *o, const struct memest_model *m,
                           struct memest_error *err)
{
    if (o->transformers && !m->arch)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--transformers: the model is a model file, not a Hugging Face "
                           "config: it follows no transformers code, so it would change nothing");
    return 0;
}
