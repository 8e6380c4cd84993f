/* usage.c - --help, --help GROUP, --help all and `memest help SUBCOMMAND`,
 * written from the option rows (options.h): each option's flags, its
 * words, its value table's names with the default marked, or its default;
 * the modes from their table, the exit codes from error.h's. A name added
 * to a table appears here. tests/unit/test_help.c checks the screens
 * against the tables and that every line fits a terminal. */
#include <stdarg.h>
#include <string.h>

#include "memest/format.h"
#include "memest/options.h"

enum {
    WIDTH = 80,  /* a usage screen: no line is longer */
    COLUMN = 25, /* where an option's description starts */
};

/* One entry's text, built up before it is wrapped. The entries are a few
 * hundred characters; a longer one is cut short, never overrun. */
struct text {
    char s[1024];
    size_t n;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->s + t->n, sizeof t->s - t->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        t->n = t->n + (size_t)k < sizeof t->s ? t->n + (size_t)k : sizeof t->s - 1;
}

/* The words of text, written from column col on and wrapped before WIDTH;
 * a continuation line starts at column indent. A number stays with the word
 * after it ("6 an output"), so that no line starts with a lone word that
 * reads as the start of an item. */
static void wrap(FILE *f, int col, int indent, const char *text)
{
    bool first = true; /* the first word of the entry: no space before it */
    for (const char *p = text; *p;) {
        p += strspn(p, " ");
        int len = (int)strcspn(p, " ");
        if (len == 0)
            break;
        if ((int)strspn(p, "0123456789") == len && p[len] == ' ' && p[len + 1] != ' ' &&
            p[len + 1])
            len += 1 + (int)strcspn(p + len + 1, " ");
        if (!first && col + 1 + len > WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (!first) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", len, p);
        col += len;
        p += len;
        first = false;
    }
    fputc('\n', f);
}

/* An option's entry: its flags, then its description in the column (one
 * space after flags that reach it). */
static void option(FILE *f, const char *flags, const struct text *t)
{
    int col = (int)strlen(flags);
    int pad = col < COLUMN ? COLUMN - col : 1;
    fprintf(f, "%s%*s", flags, pad, "");
    wrap(f, col + pad, COLUMN, t->s);
}

/* A row's description: its words, its values with the default marked
 * ("sgd, adam (default), adamw"), or " (default 1)". */
static void describe(const struct memest_opt *r, struct text *t)
{
    char dbuf[64];
    const char *dflt = memest_opt_default(r, dbuf, sizeof dbuf);
    bool marked = false;
    add(t, "%s", r->help);
    if (r->vocab) {
        const struct memest_vocab *v = r->vocab;
        int seen = 0;
        for (int k = v->first; k < v->count; k++) {
            const char *name = v->name(k);
            if (!name || (v->takes && !v->takes(k)))
                continue;
            bool is_dflt = dflt && strcmp(name, dflt) == 0;
            add(t, "%s%s%s", seen++ ? ", " : ": ", name, is_dflt ? " (default)" : "");
            marked = marked || is_dflt;
        }
    }
    if (dflt && !marked)
        add(t, " (default %s)", dflt);
}

void memest_cli_help_line(const struct memest_opt *r, char *buf, size_t n)
{
    struct text t = {0};
    describe(r, &t);
    snprintf(buf, n, "%s", t.s);
}

static void entry(FILE *f, const struct memest_opt *r)
{
    char flags[64], names[56];
    struct text t = {0};
    snprintf(flags, sizeof flags, "  %s%s", r->shrt ? "" : "    ",
             memest_opt_flags(r, true, names, sizeof names));
    describe(r, &t);
    option(f, flags, &t);
}

/* The options of group g that mode mask `modes` takes. */
static void group(FILE *f, int g, unsigned modes)
{
    bool any = false;
    for (size_t i = 0; i < memest_nopts; i++)
        any = any || (memest_opts[i].group == (enum memest_group)g &&
                      (memest_opts[i].modes & modes));
    if (!any)
        return;
    fprintf(f, "\n%s:\n", memest_group_desc(g)->title);
    for (size_t i = 0; i < memest_nopts; i++)
        if (memest_opts[i].group == (enum memest_group)g && (memest_opts[i].modes & modes))
            entry(f, &memest_opts[i]);
}

/* "Exit codes: 0 success (and fits); 1 does not fit (...); ...", from
 * error.h's table, in the form doc/options.md's table ends with. */
static void exit_codes(FILE *f)
{
    struct text t = {0};
    add(&t, "Exit codes:");
    for (int c = 0; c < MEMEST_EXIT_COUNT; c++) {
        const struct memest_exit_doc *d = memest_exit_doc(c);
        add(&t, " %d %s", c, d->meaning);
        if (d->detail[0])
            add(&t, " (%s)", d->detail);
        add(&t, "%s", c + 1 < MEMEST_EXIT_COUNT ? ";" : ".");
    }
    wrap(f, 0, 0, t.s);
}

static void overview(FILE *f)
{
    fputs("Usage: memest [SUBCOMMAND] MODEL [options]\n"
          "       memest help [SUBCOMMAND | GROUP | all]\n"
          "\n"
          "Estimates the GPU memory and FLOPs of training (and inference) of the model\n"
          "described in MODEL (format: models/README.md; a Hugging Face config.json or\n"
          "model folder, or memest-export's JSON). memest MODEL ... is memest estimate.\n"
          "\n"
          "Subcommands (each also chosen by its flag in memest MODEL ...):\n",
          f);
    for (int m = 0; m < MEMEST_MODE_COUNT; m++) {
        const struct memest_mode_desc *d = memest_mode_desc(m);
        struct text t = {0};
        char flags[40];
        add(&t, "%s%s%s%s", d->summary, d->flag ? " (" : "", d->flag ? d->flag : "",
            d->flag ? ")" : "");
        snprintf(flags, sizeof flags, "  %s", d->name);
        option(f, flags, &t);
    }
    fputs("\nOptions, by group (memest --help GROUP, or --help all for every one):\n", f);
    for (int g = 0; g < MEMEST_GROUP_COUNT; g++) {
        struct text t = {0};
        char flags[40];
        add(&t, "%s", memest_group_desc(g)->title);
        snprintf(flags, sizeof flags, "  %s", memest_group_desc(g)->name);
        option(f, flags, &t);
    }
}

const char *const memest_cli_examples[] = {
    "memest models/resnet50.json --batch 32 --optim adam",
    "memest models/gpt2.json --batch 8 --set seq_len=512 --layers",
    "memest fit models/resnet50.json --gpu a100-40gb",
    "memest sweep models/bert-base.json 1:1024:x2 --csv",
    "memest generate models/hf/llama-3-8b.json --context 4096 --gpu a100-80gb",
    NULL,
};

static void closing(FILE *f)
{
    fputs("\nExamples:\n", f);
    for (const char *const *e = memest_cli_examples; *e; e++)
        fprintf(f, "  %s\n", *e);
    fputs("\n"
          "Numbers are decimal (no hex, inf, nan or spaces): whole numbers are digits only,\n"
          "reals may have a fraction and an exponent (0.9, 1e-3), --set values a '-' sign.\n"
          "\n",
          f);
    exit_codes(f);
}

int memest_cli_help(FILE *f, const char *topic, struct memest_error *err)
{
    int g = topic ? memest_group_parse(topic) : -1;
    int m = topic ? memest_mode_parse(topic) : -1;
    if (!topic) {
        overview(f);
    } else if (strcmp(topic, "all") == 0) {
        overview(f);
        for (g = 0; g < MEMEST_GROUP_COUNT; g++)
            group(f, g, MEMEST_MODES_ALL);
    } else if (g >= 0) {
        group(f, g, MEMEST_MODES_ALL);
    } else if (m >= 0) {
        const struct memest_mode_desc *d = memest_mode_desc(m);
        fprintf(f, "Usage: memest %s %s [options]\n\n%s.\n", d->name, d->operands, d->summary);
        if (d->flag)
            fprintf(f, "The same as memest %s [options] with %s.\n", "MODEL", d->flag);
        for (g = 0; g < MEMEST_GROUP_COUNT; g++)
            group(f, g, 1u << m);
    } else {
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "help: no subcommand or group '%s' (a subcommand such as sweep, a "
                           "group such as card, or all)", topic);
    }
    if (!topic || strcmp(topic, "all") == 0)
        closing(f);
    return 0;
}
