/* ops_doc.h - the op table as documentation (src/ops/ops_doc.c). */
#pragma once

#include <stdio.h>

/* The op table as Markdown, one row per type (memest --list-ops): the
 * source of the "Op types" section of models/README.md. */
void memest_ops_print_markdown(FILE *f);
