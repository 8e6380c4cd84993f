/* config_keys.c - what the readers of the users' configs share
 * (config_keys.h). */
#include "config_keys.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memest/escape.h"
#include "memest/format.h"

#include "hf_internal.h"

int mb_cfg_bad(const struct mb_cfg *c, const char *path, const char *what)
{
    memest_err_file(c->err, c->file);
    return memest_errf(c->err, MEMEST_ERR_SCHEMA, path, "%s", what);
}

int mb_cfg_bad_value(const struct mb_cfg *c, const char *path, const cJSON *v, const char *what)
{
    char val[MEMEST_ESC_NAME + 8], num[32];
    if (cJSON_IsString(v)) {
        char cut[64], esc[MEMEST_ESC_NAME];
        snprintf(cut, sizeof cut, "%.*s", memest_utf8_prefix(v->valuestring, 60), v->valuestring);
        snprintf(val, sizeof val, "\"%s\"%s", memest_esc_text(cut, esc, sizeof esc),
                 strlen(v->valuestring) > strlen(cut) ? "..." : "");
    } else if (cJSON_IsNumber(v)) {
        snprintf(val, sizeof val, "%s", isfinite(v->valuedouble)
                                            ? memest_fmt_double(v->valuedouble, num, sizeof num)
                                            : mb_json_nonfinite(v->valuedouble));
    } else {
        snprintf(val, sizeof val, "%s", cJSON_IsTrue(v) ? "true" : cJSON_IsFalse(v) ? "false"
                                        : cJSON_IsNull(v) ? "null" : cJSON_IsArray(v) ? "a list"
                                                                                      : "an object");
    }
    memest_err_file(c->err, c->file);
    return memest_errf(c->err, MEMEST_ERR_SCHEMA, path, "%s, got %s", what, val);
}

int mb_cfg_once(const struct mb_cfg *c, struct mb_cfg_seen *sn, const char *name, const char *path)
{
    for (int i = 0; i < sn->n; i++)
        if (!strcmp(sn->name[i], name)) {
            char m[300];
            snprintf(m, sizeof m, "the setting %s is given twice (also as %s): the answer would "
                     "depend on the order of the keys", name, sn->path[i]);
            return mb_cfg_bad(c, path, m);
        }
    if (sn->n < MB_CFG_MAX_SEEN) {
        snprintf(sn->name[sn->n], sizeof sn->name[sn->n], "%.*s",
                 (int)sizeof sn->name[sn->n] - 1, name);
        snprintf(sn->path[sn->n], sizeof sn->path[sn->n], "%.*s",
                 (int)sizeof sn->path[sn->n] - 1, path);
        sn->n++;
    }
    return 0;
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
