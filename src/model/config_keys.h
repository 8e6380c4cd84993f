/* config_keys.h - what the readers of the users' several-GPU configs share
 * (ds_config.c, fsdp_config.c; private to src/model): the error that names
 * the file and the key, the note of keys that change no memory, and the
 * lists of such keys. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "memest/error.h"

struct mb_cfg {
    const char *file;
    struct memest_error *err;
    char *ignored;      /* the noted keys, ", "-separated (cut when full) */
    size_t cap;
};

/* A schema error (exit 3) naming the file and the key's path. -1. */
int mb_cfg_bad(const struct mb_cfg *c, const char *path, const char *what);
/* Notes key as one that changes no memory. */
void mb_cfg_ignore(struct mb_cfg *c, const char *key);
/* Whether name is one of the n names. */
bool mb_cfg_listed(const char *name, const char *const *names, size_t n);
