/* report_ops.c - the op table as Markdown (memest --list-ops), the source of
 * the "Op types" section of models/README.md (a test keeps them in sync). */
#include <stdio.h>
#include <string.h>

#include "memest/ops.h"
#include "memest/report.h"

static void print_default(FILE *f, const struct memest_argspec *a)
{
    if (a->required) {
        fputs("required", f);
        return;
    }
    if (a->optional) {
        fputs("None", f);
        return;
    }
    switch (a->kind) {
    case MEMEST_ARG_INT:
    case MEMEST_ARG_INTS:
        fprintf(f, "%lld", (long long)a->idef);
        break;
    case MEMEST_ARG_BOOL:
        fputs(a->idef ? "true" : "false", f);
        break;
    case MEMEST_ARG_FLOAT:
        fprintf(f, "%g", a->fdef);
        break;
    case MEMEST_ARG_STR:
    case MEMEST_ARG_NAME:
        fprintf(f, "\"%s\"", a->sdef ? a->sdef : "");
        break;
    case MEMEST_ARG_SHAPE:
    case MEMEST_ARG_COUNT:
        fputs("[]", f);
        break;
    }
}

static void print_inputs(FILE *f, const struct memest_op_desc *op)
{
    if (op->max_in < 0)
        fprintf(f, "%d+", op->min_in);
    else if (op->min_in == op->max_in)
        fprintf(f, "%d", op->min_in);
    else
        fprintf(f, "%d-%d", op->min_in, op->max_in);
}

void memest_ops_markdown(FILE *f)
{
    int n;
    const struct memest_op_desc *const *ops = memest_op_all(&n);
    fputs("| type | inputs | arguments (default) | what it is |\n| --- | --- | --- | --- |\n", f);
    for (int i = 0; i < n; i++) {
        const struct memest_op_desc *op = ops[i];
        fprintf(f, "| `%s` | ", op->name);
        print_inputs(f, op);
        fputs(" | ", f);
        for (int k = 0; k < op->nargs; k++) {
            fprintf(f, "%s`%s`=", k ? ", " : "", op->args[k].name);
            print_default(f, &op->args[k]);
            if (op->args[k].forward)
                fputs(" (forward)", f);
        }
        fprintf(f, " | %s |\n", op->doc ? op->doc : "");
    }
}
