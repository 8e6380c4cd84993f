/* loop.c - the training loops around the model (step.h: enum memest_loop):
 * their names and what each holds across the step.
 *
 * plain      out = model(x); loss = loss_fn(out, y); loss.backward(): the
 *            caller's `out` lives until the step ends (memest's rule before
 *            --loop, kept for model files).
 * trainer    transformers' Trainer (v4.48 to v5: trainer.py, training_step
 *            calls compute_loss(model, inputs), which returns the loss alone
 *            unless return_outputs: `outputs` is its local and dies before
 *            self.accelerator.backward(loss)); the model computes the loss
 *            from labels (ForCausalLMLoss: logits.float() is its local).
 * torchtune  recipes/full_finetune_single_device.py (v0.6): logits =
 *            self._model(**batch); loss = self._loss_fn(logits, labels);
 *            del logits; loss.backward(). The loss is
 *            CEWithChunkedOutputLoss (torchtune/modules/loss/ce_chunked_output_loss.py:
 *            num_output_chunks = 8; each chunk's cross_entropy(logits.float(), ...)
 *            upcasts that chunk alone).
 * torchtitan torchtitan/train.py (v0.1): pred = model(inputs); loss =
 *            loss_fn(pred, labels); del pred ("need to free to before bwd to
 *            avoid peaking memory"); loss.backward(); loss_fn is
 *            cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1)). */
#include "memest/step.h"

#include <assert.h>
#include <string.h>

static const char *const loop_names[] = {
    [MEMEST_LOOP_DEFAULT] = "default", [MEMEST_LOOP_PLAIN] = "plain",
    [MEMEST_LOOP_TRAINER] = "trainer", [MEMEST_LOOP_TORCHTUNE] = "torchtune",
    [MEMEST_LOOP_TORCHTITAN] = "torchtitan",
};
static_assert(sizeof loop_names / sizeof *loop_names == MEMEST_LOOP_COUNT, "one name per loop");

const char *memest_loop_name(enum memest_loop l)
{
    return (unsigned)l < MEMEST_LOOP_COUNT ? loop_names[l] : "?";
}

int memest_loop_parse(const char *s, enum memest_loop *l)
{
    for (int i = MEMEST_LOOP_PLAIN; i < MEMEST_LOOP_COUNT; i++)
        if (strcmp(s, loop_names[i]) == 0) {
            *l = (enum memest_loop)i;
            return 0;
        }
    return -1;
}

bool memest_loop_drops_outputs(enum memest_loop l)
{
    return l == MEMEST_LOOP_TRAINER || l == MEMEST_LOOP_TORCHTUNE || l == MEMEST_LOOP_TORCHTITAN;
}

bool memest_loop_labels(enum memest_loop l)
{
    return l == MEMEST_LOOP_PLAIN || l == MEMEST_LOOP_TRAINER || l == MEMEST_LOOP_DEFAULT;
}

unsigned memest_loop_upcast_chunks(enum memest_loop l)
{
    return l == MEMEST_LOOP_TORCHTUNE ? 8 : l == MEMEST_LOOP_TORCHTITAN ? 1 : 0;
}
