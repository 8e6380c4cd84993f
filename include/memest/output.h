/* output.h - the output formats of memest's documents. The command line
 * picks one (cli.c: text by default, --json, --csv), the flows carry it and
 * the report layer dispatches on it, one switch per document in
 * src/report/report.c. A new format is one value here, one file
 * src/report/report_FORMAT.c with its writers, and one case per document
 * in report.c (the compiler's -Wswitch names every switch that lacks it). */
#pragma once

enum memest_output {
    MEMEST_OUTPUT_TEXT = 0,  /* the human report (the default) */
    MEMEST_OUTPUT_JSON,      /* --json: one document with "schema_version" */
    MEMEST_OUTPUT_CSV,       /* --csv: a header row and one line per value (sweeps only) */
};
