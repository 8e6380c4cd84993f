/* ops.c - the registry of op families: lookup by "type" name (sorted once,
 * then binary search), argument lookup (suggestions: ops_alias.c). */
#include "memest/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_families.h"

struct family {
    const struct memest_op_desc *ops;
    const int *count;
};

#define ENTRY(f) {memest_ops_##f, &memest_ops_##f##_count},
static const struct family families[] = {MEMEST_OP_FAMILIES(ENTRY)};

/* Room for every op of every family; more is a build that lists ops it
 * cannot register, stopped at the first lookup (every test makes one),
 * never an op silently left out. */
#define MAX_OPS 256
static const struct memest_op_desc *sorted[MAX_OPS];
static int nsorted = -1;

static _Noreturn void broken_table(const char *what, const char *name)
{
    fprintf(stderr, "memest: internal: the op table %s (%s)\n", what, name);
    abort();
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const struct memest_op_desc *const *)a)->name,
                  (*(const struct memest_op_desc *const *)b)->name);
}

static void init(void)
{
    if (nsorted >= 0)
        return;
    int n = 0;
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (int i = 0; i < *families[f].count; i++) {
            if (n == MAX_OPS)
                broken_table("has more ops than MAX_OPS (src/ops/ops.c)",
                             families[f].ops[i].name);
            sorted[n++] = &families[f].ops[i];
        }
    qsort(sorted, (size_t)n, sizeof *sorted, by_name);
    for (int i = 0; i < n; i++) {
        if (i > 0 && strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
            broken_table("lists a type twice", sorted[i]->name);
        if (sorted[i]->model_input)
            broken_table("lets a node name the model-input op", sorted[i]->name);
    }
    nsorted = n;
}

const struct memest_op_desc *memest_op_find(const char *name)
{
    init();
    int lo = 0, hi = nsorted - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(name, sorted[mid]->name);
        if (c == 0)
            return sorted[mid];
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return NULL;
}

const struct memest_op_desc *const *memest_op_all(int *count)
{
    init();
    *count = nsorted;
    return sorted;
}

int memest_op_arg_index(const struct memest_op_desc *op, const char *name)
{
    for (int i = 0; i < op->nargs; i++)
        if (strcmp(op->args[i].name, name) == 0)
            return i;
    return -1;
}
