/* cli.c - the command line: an optional subcommand, then getopt_long over
 * the option rows (options.h, cli_options.c), each argument into its field
 * by its row (cli_values.c); then the checks of the whole line
 * (cli_rules.c), so that the features can trust the struct. */
#include "memest/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memest/options.h"

#define MAX_OPTS 128
#define OPT_BASE 256   /* a long option's getopt value: OPT_BASE + its row */

static struct option long_opts[MAX_OPTS + 1];
static char short_opts[2 * MAX_OPTS + 2];

/* getopt_long's tables, from the rows (once) */
static void build_tables(void)
{
    if (long_opts[0].name)
        return;
    size_t k = 0;
    short_opts[k++] = ':';   /* a missing value is ':', not '?' */
    for (size_t i = 0; i < memest_nopts && i < MAX_OPTS; i++) {
        const struct memest_opt *r = &memest_opts[i];
        static const int has[] = {no_argument, required_argument, optional_argument};
        long_opts[i] = (struct option){r->name, has[r->arg], NULL, OPT_BASE + (int)i};
        if (r->shrt) {
            short_opts[k++] = r->shrt;
            if (r->arg == MEMEST_ARG_REQUIRED)
                short_opts[k++] = ':';
        }
    }
    short_opts[k] = 0;
}

/* The row of getopt's answer c, or NULL (':' or '?'). */
static const struct memest_opt *row_of(int c)
{
    if (c >= OPT_BASE && c < OPT_BASE + (int)memest_nopts)
        return &memest_opts[c - OPT_BASE];
    for (size_t i = 0; c > 0 && i < memest_nopts; i++)
        if (memest_opts[i].shrt == c)
            return &memest_opts[i];
    return NULL;
}

/* The error for getopt_long's ':' (a missing value) or '?' (an unknown or
 * ambiguous option, or a value given to an option that takes none). optopt
 * is the short option, or the long option's val (0 when unknown). The
 * argument getopt was reading is argv[optind - 1] when it moved past it, or
 * argv[optind] when the option was inside a cluster such as "-xyz" and
 * more letters follow: `before` (optind before the call) tells which. */
static int bad_option(int c, int argc, char **argv, int before, struct memest_error *err)
{
    int i = optind;
    if (optind > before && optind - 1 < argc && argv[optind - 1][0] == '-' &&
        argv[optind - 1][1] != '\0')
        i = optind - 1; /* (the non-options getopt skips never start with '-') */
    const char *arg = i < argc ? argv[i] : "";
    bool is_long = strncmp(arg, "--", 2) == 0;
    const char *name = NULL; /* the long option's full name */
    for (const struct option *lo = long_opts; is_long && optopt && lo->name; lo++)
        if (lo->val == optopt)
            name = lo->name;
    int len = (int)strcspn(arg, "=");
    if (c == ':' && name)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--%s needs a value", name);
    if (c == ':')
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "-%c needs a value", optopt);
    if (name)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--%s takes no value, got '%s'", name,
                           arg);
    if (is_long) {
        char cands[256] = "";
        int n = 0;
        for (const struct option *lo = long_opts; lo->name; lo++)
            if (len > 2 && strncmp(lo->name, arg + 2, (size_t)len - 2) == 0) {
                size_t k = strlen(cands);
                snprintf(cands + k, sizeof cands - k, "%s--%s", n++ ? ", " : "", lo->name);
            }
        if (n > 1)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "ambiguous option '%.*s' (it could be %s)", len, arg, cands);
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "unknown option '%.*s'", len, arg);
    }
    bool file_like = strchr(arg, '.') || strchr(arg, '/');
    if (optopt > ' ' && optopt < 0x7F && (arg[1] != optopt || arg[2] != '\0'))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "unknown option '-%c' in '%s'%s%s%s",
                           optopt, arg, file_like ? " (a file whose name starts with '-' is "
                                                    "written ./" : "",
                           file_like ? arg : "", file_like ? ")" : "");
    return memest_errf(err, MEMEST_ERR_USAGE, NULL, "unknown option '%s'", arg);
}

/* Whether argv asks for --json, read as getopt_long reads it (an option's
 * value or an operand after "--" is not the option), so that an error found
 * before the parser reaches it still gets the JSON error document. The
 * leading "-" returns operands in place (as option 1) instead of moving
 * them after the options, which would change what the parse reads. */
static bool wants_json(int argc, char **argv)
{
    bool json = false;
    char in_order[sizeof short_opts + 1];
    snprintf(in_order, sizeof in_order, "-%s", short_opts);
    int c;
    optind = 0; /* glibc: start over */
    opterr = 0;
    while ((c = getopt_long(argc, argv, in_order, long_opts, NULL)) != -1)
        json = json || (row_of(c) && strcmp(row_of(c)->name, "json") == 0);
    return json;
}

void memest_cli_defaults(struct memest_cli *o)
{
    memset(o, 0, sizeof *o);
    memest_step_cfg_default(&o->step);
    o->dtype = MEMEST_F32;
    memest_dist_default(&o->dist);
    struct memest_error ignored = {0};
    for (size_t i = 0; i < memest_nopts; i++)
        if (memest_opts[i].dflt && memest_opts[i].kind != MEMEST_K_CUSTOM)
            memest_opt_store(&memest_opts[i], (char *)memest_opts[i].dflt, o, &ignored);
}

/* The operands: MODEL, and a sweep's LIST (memest sweep MODEL LIST). */
static int operands(int argc, char **argv, struct memest_cli *o, int sub, bool *given,
                    struct memest_error *err)
{
    if (optind < argc)
        o->model = argv[optind++];
    const struct memest_opt *sweep = memest_opt_find("sweep");
    if (optind < argc && sub == MEMEST_MODE_SWEEP && !o->sweep && !o->sweep_var) {
        if (memest_opt_apply(sweep, argv[optind], o, err) != 0)
            return -1;
        given[sweep - memest_opts] = true;
        optind++;
    }
    if (optind < argc)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "unexpected argument '%s' (one model file only)", argv[optind]);
    return 0;
}

/* --gpus-file FILE (or =FILE) among the arguments after --list-gpus, which
 * stops the parse: the last one, as getopt would take it. */
static void gpus_file_after(int argc, char **argv, struct memest_cli *o)
{
    static const char flag[] = "--gpus-file";
    for (int i = optind; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], flag) == 0 && i + 1 < argc && argv[i + 1][0])
            o->gpus_file = argv[++i];
        else if (strncmp(argv[i], flag, sizeof flag - 1) == 0 && argv[i][sizeof flag - 1] == '=' &&
                 argv[i][sizeof flag])
            o->gpus_file = argv[i] + sizeof flag;
    }
}

/* argv[1] a subcommand: its mode, MEMEST_MODE_COUNT for help, or -1. */
static int subcommand(int argc, char **argv)
{
    if (argc < 2)
        return -1;
    if (strcmp(argv[1], "help") == 0)
        return MEMEST_MODE_COUNT;
    return memest_mode_parse(argv[1]);
}

int memest_cli_parse(int argc, char **argv, struct memest_cli *o, struct memest_error *err)
{
    if (memest_nopts > MAX_OPTS)
        return memest_errf(err, MEMEST_ERR_INTERNAL, NULL, "internal: %zu option rows, room for %d",
                           memest_nopts, MAX_OPTS);
    build_tables();
    memest_cli_defaults(o);
    o->format = wants_json(argc, argv) ? MEMEST_OUTPUT_JSON : MEMEST_OUTPUT_TEXT;
    int sub = subcommand(argc, argv);
    if (sub == MEMEST_MODE_COUNT) {   /* memest help [TOPIC] */
        o->help = true;
        o->help_topic = argc > 2 ? argv[2] : NULL;
        return 0;
    }
    if (sub >= 0)   /* the options and operands after it: its word is "argv[0]" */
        argc--, argv++;
    bool given[MAX_OPTS] = {0};
    /* glibc: 0, not 1, starts over in the default order (not wants_json's)
     * and forgets a cluster a previous parse left half read */
    optind = 0;
    opterr = 0;
    int c, before = 1;
    while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
        const struct memest_opt *row = row_of(c);
        if (!row)
            return bad_option(c, argc, argv, before, err);
        if (memest_opt_apply(row, optarg, o, err) != 0)
            return -1;
        given[row - memest_opts] = true;
        if (row->kind == MEMEST_K_ACTION) {   /* --help [TOPIC], --version, ... */
            o->help_topic = optind < argc && argv[optind][0] != '-' ? argv[optind]
                            : sub >= 0 ? memest_mode_desc(sub)->name : NULL;
            if (o->list_gpus)   /* it lists the presets of a --gpus-file after it too */
                gpus_file_after(argc, argv, o);
            return 0;
        }
        before = optind;
    }
    if (operands(argc, argv, o, sub, given, err) != 0 ||
        memest_cli_check(o, given, sub, err) != 0)
        return -1;
    return o->model ? 0 : memest_errf(err, MEMEST_ERR_USAGE, NULL, "no model file given");
}
