/* config_keys.h - what the readers of the users' several-GPU configs share
 * (ds_config.c, fsdp_config.c; private to src/model): the error that names
 * the file and the key, the note of keys that change no memory, and the
 * lists of such keys. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "memest/error.h"

/* A config file (DeepSpeed, FSDP): 1 MiB is far past any. */
#define MB_CONFIG_MAX_BYTES (1u << 20)

struct mb_cfg {
    const char *file;
    struct memest_error *err;
    char *ignored;      /* the noted keys, ", "-separated (cut when full) */
    size_t cap;
};

/* A schema error (exit 3) naming the file and the key's path. -1. */
int mb_cfg_bad(const struct mb_cfg *c, const char *path, const char *what);
/* The same, with ", got VALUE" after `what` (the value as JSON writes it, a
 * text quoted and escaped, cut to 60 bytes; a list or an object by kind). */
int mb_cfg_bad_value(const struct mb_cfg *c, const char *path, const cJSON *v, const char *what);

/* The settings a reader has taken, by name, with the key path each came
 * from, so that one given twice (under two spellings) is refused. */
#define MB_CFG_MAX_SEEN 64
struct mb_cfg_seen {
    char name[MB_CFG_MAX_SEEN][64];
    char path[MB_CFG_MAX_SEEN][128];
    int n;
};

/* Notes that the setting `name` comes from the key `path`; a setting that
 * came from another key already is refused (a schema error naming both):
 * the answer would depend on the order of the keys. 0 / -1. */
int mb_cfg_once(const struct mb_cfg *c, struct mb_cfg_seen *seen, const char *name,
                const char *path);

/* Notes key as one that changes no memory. */
void mb_cfg_ignore(struct mb_cfg *c, const char *key);
/* Whether name is one of the n names. */
bool mb_cfg_listed(const char *name, const char *const *names, size_t n);
