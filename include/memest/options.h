/* options.h - the command line as data: one row per option (cli_options.c),
 * the subcommands (modes) that accept it, and the value tables its words
 * come from. The parser (cli.c), --help and `memest help SUBCOMMAND`
 * (usage.c), and through `memest --dump-options` the man page, the shell
 * completions and doc/options.md (tests/tools/gen_docs.py) are all read
 * off these rows: adding an option is a row here and its consumer.
 *
 * A row names its argument's kind; the generic kinds (a whole number in
 * bounds, a real in bounds, a size, a flag, a non-empty string, a name of a
 * value table) are parsed by cli_values.c into the field the row points
 * at, and write the same "expected ..." words in every message. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memest/cli.h"
#include "memest/error.h"

/* What memest does: `memest MODE MODEL ...`, or `memest MODEL ...` with
 * the mode chosen by its flag (--sweep, --fit, ...). */
enum memest_mode {
    MEMEST_MODE_ESTIMATE = 0,
    MEMEST_MODE_SWEEP,
    MEMEST_MODE_MAX_BATCH,
    MEMEST_MODE_FIT,
    MEMEST_MODE_COMPARE,
    MEMEST_MODE_ADVISE,
    MEMEST_MODE_GENERATE,
    MEMEST_MODE_COUNT
};
#define MEMEST_M(x) (1u << MEMEST_MODE_##x)
#define MEMEST_MODES_ALL ((1u << MEMEST_MODE_COUNT) - 1)
/* every mode with a training step (or --inference's forward pass) */
#define MEMEST_MODES_STEP (MEMEST_MODES_ALL & ~MEMEST_M(GENERATE))

struct memest_mode_desc {
    const char *name;     /* "max-batch": the subcommand */
    const char *noun;     /* "the largest batch": what it makes */
    const char *flag;     /* "--max-batch": the flag that chooses it in `memest MODEL ...` */
    const char *summary;  /* one line for --help */
    const char *operands; /* "MODEL [LIST]" */
};
const struct memest_mode_desc *memest_mode_desc(enum memest_mode m);
/* The mode named s (a subcommand), or -1. */
int memest_mode_parse(const char *s);

/* The groups of --help and of the man page, in their order. */
enum memest_group {
    MEMEST_GROUP_STEP = 0,
    MEMEST_GROUP_LLM,
    MEMEST_GROUP_LORA,
    MEMEST_GROUP_GENERATE,
    MEMEST_GROUP_DIST,
    MEMEST_GROUP_CARD,
    MEMEST_GROUP_OUTPUT,
    MEMEST_GROUP_COUNT
};
struct memest_group_desc {
    const char *name;    /* "card": --help card */
    const char *title;   /* "The card" */
};
const struct memest_group_desc *memest_group_desc(enum memest_group g);
int memest_group_parse(const char *s);

/* What must hold for an option to change anything (a row's needs): each
 * one a test over the parsed options and the words of its refusal. */
enum memest_need {
    MEMEST_NEED_TRAINING = 1u << 0,   /* a training step: not --inference, not generate */
    MEMEST_NEED_CARD = 1u << 1,       /* --gpu NAME or --mem SIZE */
    MEMEST_NEED_PRESET = 1u << 2,     /* --gpu NAME: a preset's peak FLOP/s */
    MEMEST_NEED_PROBE = 1u << 3,      /* --probe */
    MEMEST_NEED_LORA = 1u << 4,       /* --lora R */
    MEMEST_NEED_KV_BLOCK = 1u << 5,   /* --kv-block B */
    MEMEST_NEED_PP = 1u << 6,         /* --pp 2 or more */
    MEMEST_NEED_GPU = 1u << 7,        /* --gpu (NAME, auto, all or a list): the presets are read */
};

/* A value table: the names an option takes, in the order --help lists
 * them. value(i) is what the i-th name stands for. A module's own table
 * (the optimizers, the attention kernels, ...) is read through its name
 * function; parse, where given, is the module's parser (its aliases too). */
struct memest_vocab {
    const char *(*name)(int v);          /* NULL: not a value of this option */
    int (*parse)(const char *s, int *v); /* NULL: the names only */
    int first, count;                    /* the values first..count-1 */
    bool (*takes)(int v);                /* the values the option takes; NULL: all */
};
/* "fp32, fp16 or bf16" (or with `or` -> `and`): the names of a vocabulary,
 * into buf. */
const char *memest_vocab_words(const struct memest_vocab *v, const char *last, char *buf,
                               size_t n);
/* The value of name s in v, or -1. */
int memest_vocab_find(const struct memest_vocab *v, const char *s);

enum memest_opt_kind {
    MEMEST_K_FLAG = 0,   /* bool field = true */
    MEMEST_K_U64,        /* int64_t field, lo..hi */
    MEMEST_K_REAL,       /* double field, lo..hi */
    MEMEST_K_SIZE,       /* uint64_t field: a size, 1..hi bytes */
    MEMEST_K_STR,        /* const char * field: a non-empty text */
    MEMEST_K_VOCAB,      /* an integer field of `size` bytes: a vocabulary's value */
    MEMEST_K_CUSTOM,     /* the row's parse */
    MEMEST_K_ACTION,     /* --help, --version, --list-*: the bool field, then stop */
};

enum memest_opt_arg { MEMEST_ARG_NONE = 0, MEMEST_ARG_REQUIRED, MEMEST_ARG_OPTIONAL };

struct memest_opt;
typedef int memest_opt_parse_f(const struct memest_opt *row, char *arg, struct memest_cli *o,
                               struct memest_error *err);
typedef memest_opt_parse_f *memest_opt_parse_fn;

struct memest_opt {
    const char *name;         /* "batch": --batch */
    char shrt;                /* 'b': -b; 0: none */
    enum memest_opt_arg arg;
    const char *metavar;      /* "N" (NULL for a flag) */
    enum memest_group group;
    unsigned modes;           /* MEMEST_M(...) bits: the modes that accept it */
    unsigned needs;           /* enum memest_need bits */
    int verb;                 /* the mode it chooses in `memest MODEL ...`; -1: none */
    enum memest_opt_kind kind;
    size_t off, size;         /* the field in struct memest_cli it writes */
    size_t given_off;         /* a bool field set when it is given; 0: none */
    double lo, hi;            /* bounds (K_U64, K_REAL, K_SIZE: hi only) */
    const struct memest_vocab *vocab;
    memest_opt_parse_fn parse;      /* K_CUSTOM (and any kind's extra step after it) */
    const char *noun;         /* "a rank": what a number is, in "expected a rank between ..." */
    const char *expected;     /* the words after "expected" when not the kind's own */
    const char *dflt;         /* the default, as a value the parser takes (applied first) */
    const char *dflt_text;    /* the default in words, where it is not one value */
    const char *(*dflt_fn)(char *buf, size_t n);   /* or one computed */
    const char *help;         /* --help's words */
    const char *doc;          /* more, for the man page and doc/options.md */
};

/* The rows, in --help order (cli_options.c). */
extern const struct memest_opt memest_opts[];
extern const size_t memest_nopts;
/* The row of --name, or NULL. */
const struct memest_opt *memest_opt_find(const char *name);

/* cli_values.c: an argument of `row` into its field; 0 / -1 (usage error,
 * "--NAME: expected WORDS, got 'ARG'"). */
int memest_opt_apply(const struct memest_opt *row, char *arg, struct memest_cli *o,
                     struct memest_error *err);
/* The value alone, without the row's given flag and parse step (the
 * defaults). */
int memest_opt_store(const struct memest_opt *row, char *arg, struct memest_cli *o,
                     struct memest_error *err);
/* The "expected ..." words of a row, into buf. */
const char *memest_opt_expected(const struct memest_opt *row, char *buf, size_t n);
/* The usage error for a bad value. */
int memest_opt_bad(struct memest_error *err, const char *opt, const char *val,
                   const char *expected);
/* "--batch N" / "-b, --batch N" / "--checkpoint[=B,..]": the row's flags. */
const char *memest_opt_flags(const struct memest_opt *row, bool with_short, char *buf, size_t n);
/* The default of a row as --help states it ("1", "adam"), or NULL. */
const char *memest_opt_default(const struct memest_opt *row, char *buf, size_t n);

/* The options before any is given: the modules' defaults (step.h,
 * dist.h), then each row's dflt. */
void memest_cli_defaults(struct memest_cli *o);
/* The checks over the whole command line (cli_rules.c): the mode, every
 * option given against its modes and needs, then the cross-option rules.
 * given[i]: memest_opts[i] was on the command line. */
int memest_cli_check(struct memest_cli *o, const bool *given, int subcommand,
                     struct memest_error *err);

/* --help [GROUP|all], `memest help [SUBCOMMAND]` (usage.c); topic NULL:
 * the overview. 0, or -1 when topic names nothing (err set). */
int memest_cli_help(FILE *f, const char *topic, struct memest_error *err);
/* A row's description as --help words it (its values, its default). */
void memest_cli_help_line(const struct memest_opt *row, char *buf, size_t n);
/* The examples of --help (and of the man page), NULL-terminated. */
extern const char *const memest_cli_examples[];
/* The rows, the modes and the groups as one JSON document (the man page's,
 * the completions' and doc/options.md's source). */
void memest_cli_dump(FILE *f);
