/* config_keys.c - what the readers of the users' configs share
 * (config_keys.h). */
#include "config_keys.h"

#include <stdio.h>
#include <string.h>

int mb_cfg_bad(const struct mb_cfg *c, const char *path, const char *what)
{
    memest_err_file(c->err, c->file);
    return memest_errf(c->err, MEMEST_ERR_SCHEMA, path, "%s", what);
}

void mb_cfg_ignore(struct mb_cfg *c, const char *key)
{
    size_t k = strlen(c->ignored);
    if (k + strlen(key) + 3 < c->cap)
        snprintf(c->ignored + k, c->cap - k, "%s%s", k ? ", " : "", key);
}

bool mb_cfg_listed(const char *name, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}
