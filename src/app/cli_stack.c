/* cli_stack.c - the variables a template reads about the stack around the
 * model (cli.h: memest_cli_stack_sets): the transformers release (5.x:
 * no option chooses another yet), whether the model computes its own loss from labels
 * (--loop), and whether its forward builds a DynamicCache (use_cache, off
 * under gradient checkpointing and in generation, whose cache memest
 * replays itself). A model that declares none of them is built as before. */
#include <stdio.h>

#include "memest/cli.h"
#include "memest/model.h"

static bool checkpointing(const struct memest_cli *o)
{
    return o->step.checkpoint || o->step.ncheckpoint_names > 0;
}

int memest_cli_stack_sets(const struct memest_cli *o, const struct memest_model *m,
                          enum memest_loop loop, struct memest_override *sets, int n,
                          struct memest_stack_vars *buf)
{
    bool training = !o->inference && !o->generate;
    bool labels = training && memest_loop_labels(loop) &&
                  !(o->step.loss_set && o->step.loss == MEMEST_LOSS_NONE);
    /* PreTrainedModel: `if self.gradient_checkpointing and self.training and
     * use_cache: use_cache = False` (LlamaModel.forward, v4.48 to v5) */
    bool cache = !o->generate && !(training && checkpointing(o));
    snprintf(buf->transformers, sizeof buf->transformers, "%u",
             o->transformers ? (unsigned)o->transformers : 500u);
    const struct memest_override all[MEMEST_STACK_VARS] = {
        {"transformers", buf->transformers, "(transformers 5.x)"},
        {"labels", labels ? "true" : "false", "--loop"},
        {"forward_cache", cache ? "true" : "false", "--checkpoint"},
    };
    for (int i = 0; i < MEMEST_STACK_VARS; i++)
        if (memest_model_has_variable(m, all[i].name, NULL))
            sets[n++] = all[i];
    return n;
}
