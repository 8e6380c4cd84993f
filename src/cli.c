/* cli.c - option parsing with getopt_long; every value is checked. */
#include "memest/cli.h"

#include <getopt.h>
#include <string.h>

#include "memest/format.h"

enum {
    OPT_MOMENTUM = 256,
    OPT_AMSGRAD,
    OPT_CENTERED,
    OPT_DTYPE,
    OPT_LAYERS,
    OPT_JSON,
    OPT_SET,
    OPT_PROBE,
    OPT_DEVICE,
    OPT_VERSION,
    OPT_LIST_OPS,
};

static const struct option long_opts[] = {
    {"batch", required_argument, NULL, 'b'},
    {"optim", required_argument, NULL, 'o'},
    {"momentum", required_argument, NULL, OPT_MOMENTUM},
    {"amsgrad", no_argument, NULL, OPT_AMSGRAD},
    {"centered", no_argument, NULL, OPT_CENTERED},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"layers", no_argument, NULL, OPT_LAYERS},
    {"json", no_argument, NULL, OPT_JSON},
    {"set", required_argument, NULL, OPT_SET},
    {"probe", no_argument, NULL, OPT_PROBE},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"list-ops", no_argument, NULL, OPT_LIST_OPS},
    {NULL, 0, NULL, 0},
};

void memest_cli_usage(FILE *f)
{
    fputs(
        "Usage: memest [options] MODEL.json\n"
        "\n"
        "Estimates the GPU memory and FLOPs of training (and inference) of the model\n"
        "described in MODEL.json (format: models/README.md).\n"
        "\n"
        "Options:\n"
        "  -b, --batch N        batch size (default 1)\n"
        "  -o, --optim NAME     sgd, adam, adamw, rmsprop, adagrad (default adam)\n"
        "      --momentum M     momentum for sgd and rmsprop (default 0)\n"
        "      --amsgrad        adam/adamw with amsgrad (one more state copy)\n"
        "      --centered       centered rmsprop (one more state copy)\n"
        "      --dtype T        parameter and activation type: fp32, fp16, bf16 (default fp32)\n"
        "      --set NAME=VAL   override a model variable (repeatable)\n"
        "      --layers         add a per-layer table\n"
        "      --json           machine-readable output (see README.md)\n"
        "      --probe          check the prediction on a real CUDA device\n"
        "      --device N       CUDA device for --probe (default 0)\n"
        "  -h, --help           this help\n"
        "      --version        print the version\n"
        "      --list-ops       print the supported layer types (Markdown)\n"
        "\n"
        "Examples:\n"
        "  memest models/resnet50.json --batch 32 --optim adam\n"
        "  memest models/gpt2.json --batch 8 --set seq_len=512 --layers\n"
        "  memest models/bert-base.json --batch 16 --optim sgd --momentum 0.9 --json\n"
        "\n"
        "Exit codes: 0 success, 1 does not fit (--probe), 2 usage error,\n"
        "3 invalid or unreadable model file, 4 no usable CUDA driver or device (--probe),\n"
        "5 internal error or out of memory.\n",
        f);
}

static int bad(struct memest_error *err, const char *opt, const char *val, const char *expected)
{
    return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s: expected %s, got '%s'", opt, expected, val);
}

int memest_cli_parse(int argc, char **argv, struct memest_cli *o, struct memest_error *err)
{
    memset(o, 0, sizeof *o);
    o->batch = 1;
    o->optim.kind = MEMEST_OPT_ADAM;
    o->dtype = MEMEST_F32;
    optind = 1;
    opterr = 0;
    int c, longidx;
    while ((c = getopt_long(argc, argv, ":b:o:h", long_opts, &longidx)) != -1) {
        uint64_t u;
        switch (c) {
        case 'b':
            if (memest_parse_u64(optarg, 1, (uint64_t)1 << 53, &u) != 0)
                return bad(err, "--batch", optarg, "a whole number between 1 and 2^53");
            o->batch = (int64_t)u;
            break;
        case 'o':
            if (memest_optim_parse(optarg, &o->optim.kind) != 0)
                return bad(err, "--optim", optarg, "one of sgd, adam, adamw, rmsprop, adagrad");
            break;
        case OPT_MOMENTUM:
            if (memest_parse_double(optarg, 0, 1, &o->optim.momentum) != 0)
                return bad(err, "--momentum", optarg, "a number between 0 and 1");
            break;
        case OPT_AMSGRAD:
            o->optim.amsgrad = true;
            break;
        case OPT_CENTERED:
            o->optim.centered = true;
            break;
        case OPT_DTYPE:
            if (memest_dtype_parse(optarg, &o->dtype) != 0 || !memest_dtype_is_float(o->dtype) ||
                o->dtype == MEMEST_F64)
                return bad(err, "--dtype", optarg, "fp32, fp16 or bf16");
            break;
        case OPT_LAYERS:
            o->layers = true;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_SET: {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1])
                return bad(err, "--set", optarg, "NAME=VALUE");
            if (o->nsets == MEMEST_MAX_SETS)
                return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--set: at most %d overrides",
                                   MEMEST_MAX_SETS);
            *eq = '\0';
            o->sets[o->nsets++] = (struct memest_override){optarg, eq + 1};
            break;
        }
        case OPT_PROBE:
            o->probe = true;
            break;
        case OPT_DEVICE:
            if (memest_parse_u64(optarg, 0, 1023, &u) != 0)
                return bad(err, "--device", optarg, "a device number between 0 and 1023");
            o->device = (int)u;
            break;
        case 'h':
            o->help = true;
            return 0;
        case OPT_VERSION:
            o->version = true;
            return 0;
        case OPT_LIST_OPS:
            o->list_ops = true;
            return 0;
        case ':':
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s needs a value", argv[optind - 1]);
        default:
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "unknown option '%s'",
                               argv[optind - 1]);
        }
    }
    if (o->optim.momentum != 0 && o->optim.kind != MEMEST_OPT_SGD &&
        o->optim.kind != MEMEST_OPT_RMSPROP)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--momentum applies to sgd and rmsprop, not %s",
                           memest_optim_name(o->optim.kind));
    if (o->optim.amsgrad && o->optim.kind != MEMEST_OPT_ADAM && o->optim.kind != MEMEST_OPT_ADAMW)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--amsgrad applies to adam and adamw");
    if (o->optim.centered && o->optim.kind != MEMEST_OPT_RMSPROP)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--centered applies to rmsprop");
    if (optind >= argc)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "no model file given");
    if (optind + 1 < argc)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "unexpected argument '%s' (one model file only)",
                           argv[optind + 1]);
    o->model = argv[optind];
    return 0;
}
