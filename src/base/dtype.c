/* dtype.c - the element type table. */
#include "memest/dtype.h"

#include <assert.h>
#include <string.h>

struct dtype_info {
    const char *name;
    const char *aliases; /* space-separated PyTorch names */
    unsigned size;
    bool is_float;
};

static const struct dtype_info dtypes[MEMEST_DTYPE_COUNT] = {
    [MEMEST_F32] = {"fp32", "float32 float", 4, true},
    [MEMEST_F16] = {"fp16", "float16 half", 2, true},
    [MEMEST_BF16] = {"bf16", "bfloat16", 2, true},
    [MEMEST_F64] = {"fp64", "float64 double", 8, true},
    [MEMEST_I64] = {"int64", "long", 8, false},
    [MEMEST_I32] = {"int32", "int", 4, false},
    [MEMEST_I16] = {"int16", "short", 2, false},
    [MEMEST_I8] = {"int8", "", 1, false},
    [MEMEST_U8] = {"uint8", "", 1, false},
    [MEMEST_BOOL] = {"bool", "", 1, false},
};
static_assert(MEMEST_DTYPE_COUNT == 10, "update the dtype table");

unsigned memest_dtype_size(enum memest_dtype t) { return dtypes[t].size; }
const char *memest_dtype_name(enum memest_dtype t) { return dtypes[t].name; }
bool memest_dtype_is_float(enum memest_dtype t) { return dtypes[t].is_float; }
bool memest_dtype_is_half(enum memest_dtype t) { return t == MEMEST_F16 || t == MEMEST_BF16; }

static bool in_aliases(const char *aliases, const char *s)
{
    size_t n = strlen(s);
    for (const char *p = aliases; *p;) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, s, n) == 0)
            return true;
        p += len;
        p += strspn(p, " ");
    }
    return false;
}

int memest_dtype_parse(const char *s, enum memest_dtype *out)
{
    if (strncmp(s, "torch.", 6) == 0)
        s += 6;
    for (int i = 0; i < MEMEST_DTYPE_COUNT; i++) {
        if (strcmp(s, dtypes[i].name) == 0 || in_aliases(dtypes[i].aliases, s)) {
            *out = (enum memest_dtype)i;
            return 0;
        }
    }
    return -1;
}

const char *memest_dtype_names(void)
{
    return "fp32 (float32), fp16 (float16), bf16 (bfloat16), fp64 (float64), int64, int32, int16, "
           "int8, uint8, bool";
}
