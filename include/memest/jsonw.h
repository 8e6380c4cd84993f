/* jsonw.h - a small JSON writer for memest's machine output: keys in the
 * order written, 64-bit integers printed exactly, strings escaped. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MEMEST_JSONW_DEPTH 32

struct memest_jsonw {
    FILE *f;
    int depth;
    bool first[MEMEST_JSONW_DEPTH]; /* no member written yet at this depth */
    bool pretty;
};

void memest_jsonw_init(struct memest_jsonw *w, FILE *f, bool pretty);
void memest_jsonw_obj_begin(struct memest_jsonw *w, const char *key);  /* key NULL in arrays / top */
void memest_jsonw_obj_end(struct memest_jsonw *w);
void memest_jsonw_arr_begin(struct memest_jsonw *w, const char *key);
void memest_jsonw_arr_end(struct memest_jsonw *w);
void memest_jsonw_str(struct memest_jsonw *w, const char *key, const char *s);  /* s NULL: null */
void memest_jsonw_u64(struct memest_jsonw *w, const char *key, uint64_t v);
void memest_jsonw_i64(struct memest_jsonw *w, const char *key, int64_t v);
void memest_jsonw_f64(struct memest_jsonw *w, const char *key, double v);  /* %.17g, null if not finite */
/* A count held in a double (FLOPs, MACs, bytes moved): an exact integer
 * when it is in [0, 9.2e18) (rounded to the nearest one), %.17g otherwise. */
void memest_jsonw_count(struct memest_jsonw *w, const char *key, double v);
void memest_jsonw_bool(struct memest_jsonw *w, const char *key, bool v);
void memest_jsonw_null(struct memest_jsonw *w, const char *key);
/* Ends the document with a newline. The stream is not flushed: whoever
 * owns it checks it once at the end (a failed flush here would take the
 * system's reason with it). */
void memest_jsonw_finish(struct memest_jsonw *w);
