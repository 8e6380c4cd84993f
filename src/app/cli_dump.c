/* cli_dump.c - `memest --dump-options`: the option rows, the modes and the
 * groups (options.h) as one JSON document, the source that
 * tests/tools/gen_docs.py writes the man page, the bash and zsh
 * completions and doc/options.md from, and that the ctest
 * docs.options_agree reads them against. */
#include <stdio.h>

#include "memest/jsonw.h"
#include "memest/options.h"

static const char *const arg_names[] = {"none", "required", "optional"};

static void dump_row(struct memest_jsonw *w, const struct memest_opt *r)
{
    char buf[1024], shrt[2] = {r->shrt, 0};
    memest_jsonw_obj_begin(w, NULL);
    memest_jsonw_str(w, "name", r->name);
    memest_jsonw_str(w, "short", r->shrt ? shrt : NULL);
    memest_jsonw_str(w, "arg", arg_names[r->arg]);
    memest_jsonw_str(w, "metavar", r->metavar);
    memest_jsonw_str(w, "flags", memest_opt_flags(r, true, buf, sizeof buf));
    memest_jsonw_str(w, "group", memest_group_desc(r->group)->name);
    memest_jsonw_arr_begin(w, "modes");
    for (int m = 0; m < MEMEST_MODE_COUNT; m++)
        if (r->modes & (1u << m))
            memest_jsonw_str(w, NULL, memest_mode_desc(m)->name);
    memest_jsonw_arr_end(w);
    memest_jsonw_str(w, "verb", r->verb >= 0 ? memest_mode_desc(r->verb)->name : NULL);
    /* F, F.csv, F.svg: a file the shells complete */
    memest_jsonw_bool(w, "file", r->metavar && r->metavar[0] == 'F' &&
                                     (r->metavar[1] == 0 || r->metavar[1] == '.'));
    memest_jsonw_arr_begin(w, "values");
    const struct memest_vocab *v = r->vocab;
    for (int k = v ? v->first : 0; v && k < v->count; k++)
        if (v->name(k) && (!v->takes || v->takes(k)))
            memest_jsonw_str(w, NULL, v->name(k));
    memest_jsonw_arr_end(w);
    memest_jsonw_str(w, "default", memest_opt_default(r, buf, sizeof buf));
    memest_cli_help_line(r, buf, sizeof buf);
    memest_jsonw_str(w, "text", buf);
    memest_jsonw_str(w, "doc", r->doc);
    memest_jsonw_obj_end(w);
}

void memest_cli_dump(FILE *f)
{
    struct memest_jsonw w;
    memest_jsonw_init(&w, f, true);
    memest_jsonw_obj_begin(&w, NULL);
    memest_jsonw_arr_begin(&w, "modes");
    for (int m = 0; m < MEMEST_MODE_COUNT; m++) {
        const struct memest_mode_desc *d = memest_mode_desc(m);
        memest_jsonw_obj_begin(&w, NULL);
        memest_jsonw_str(&w, "name", d->name);
        memest_jsonw_str(&w, "flag", d->flag);
        memest_jsonw_str(&w, "summary", d->summary);
        memest_jsonw_str(&w, "operands", d->operands);
        memest_jsonw_obj_end(&w);
    }
    memest_jsonw_arr_end(&w);
    memest_jsonw_arr_begin(&w, "groups");
    for (int g = 0; g < MEMEST_GROUP_COUNT; g++) {
        memest_jsonw_obj_begin(&w, NULL);
        memest_jsonw_str(&w, "name", memest_group_desc(g)->name);
        memest_jsonw_str(&w, "title", memest_group_desc(g)->title);
        memest_jsonw_obj_end(&w);
    }
    memest_jsonw_arr_end(&w);
    memest_jsonw_arr_begin(&w, "examples");
    for (const char *const *e = memest_cli_examples; *e; e++)
        memest_jsonw_str(&w, NULL, *e);
    memest_jsonw_arr_end(&w);
    memest_jsonw_arr_begin(&w, "exit_codes");
    for (int c = 0; c < MEMEST_EXIT_COUNT; c++) {
        memest_jsonw_obj_begin(&w, NULL);
        memest_jsonw_i64(&w, "code", c);
        memest_jsonw_str(&w, "meaning", memest_exit_doc(c)->meaning);
        memest_jsonw_str(&w, "detail", memest_exit_doc(c)->detail);
        memest_jsonw_obj_end(&w);
    }
    memest_jsonw_arr_end(&w);
    memest_jsonw_arr_begin(&w, "options");
    for (size_t i = 0; i < memest_nopts; i++)
        dump_row(&w, &memest_opts[i]);
    memest_jsonw_arr_end(&w);
    memest_jsonw_obj_end(&w);
    memest_jsonw_finish(&w);
}
