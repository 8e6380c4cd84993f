/* report_gpus.c - the GPU presets as a Markdown table (memest --list-gpus;
 * README.md includes it). */
#include <stdio.h>

#include "memest/escape.h"
#include "memest/format.h"
#include "memest/gpu.h"
#include "memest/report.h"

static void tflops_cell(FILE *f, double flops)
{
    if (flops > 0)
        fprintf(f, " %g |", flops / 1e12);
    else
        fputs(" - |", f);
}

void memest_gpus_markdown(FILE *f, const struct memest_gpu_table *t)
{
    fputs("| name | card | arch | memory (bytes) | memory | FP32 | TF32 | FP16 | BF16 | bandwidth |\n"
          "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
          f);
    bool inexact = false;
    for (size_t i = 0; i < t->n; i++) {
        const struct memest_gpu *g = &t->gpus[i];
        char bytes[32], iec[32];
        fprintf(f, "| `%s`", g->name);
        for (int a = 0; a < g->naliases; a++)
            fprintf(f, "%s`%s`", a ? ", " : " (also ", g->aliases[a]);
        char label[MEMEST_ESC_NAME];
        fprintf(f, "%s%s | %s | %s | %s%s | %s |", g->naliases ? ")" : "",
                g->user ? " (user)" : "", memest_esc_text(g->label, label, sizeof label), g->arch,
                memest_fmt_count(g->memory, bytes, sizeof bytes), g->memory_exact ? "" : " *",
                memest_fmt_bytes(g->memory, iec, sizeof iec));
        for (int p = 0; p < MEMEST_PREC_COUNT; p++)
            tflops_cell(f, g->peak_flops[p]);
        fprintf(f, " %g GB/s |\n", g->bandwidth / 1e9);
        inexact |= !g->memory_exact;
    }
    fputs("\nFP32 to BF16: dense peak TFLOP/s (tensor cores for TF32, FP16, BF16; - where the card "
          "has none).\nMemory: the total as the driver reports it (CUDA 12 drivers; it varies "
          "slightly by driver).\n",
          f);
    if (inexact)
        fputs("Memory marked *: not a driver-reported CUDA total (models/gpus.json says which); "
              "prefer --mem or --probe --gpu auto for that card.\n",
              f);
    if (t->user_file) {
        char file[MEMEST_ESC_NAME];
        fprintf(f, "Presets marked (user): from %s",
                memest_esc_text(t->user_file, file, sizeof file));
        int k = 0;
        for (size_t i = 0; i < t->n; i++)
            if (t->gpus[i].replaces)
                fprintf(f, "%s`%s` replaces the built-in `%s`", k++ ? ", " : "; ",
                        t->gpus[i].name, t->gpus[i].replaces);
        fputs(".\n", f);
    }
}
