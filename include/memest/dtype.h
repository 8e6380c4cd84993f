/* dtype.h - tensor element types and their sizes. */
#pragma once

#include <stdbool.h>

enum memest_dtype {
    MEMEST_F32 = 0,
    MEMEST_F16,
    MEMEST_BF16,
    MEMEST_F64,
    MEMEST_I64,
    MEMEST_I32,
    MEMEST_I16,
    MEMEST_I8,
    MEMEST_U8,
    MEMEST_BOOL,
    MEMEST_DTYPE_COUNT
};

/* Bytes per element. */
unsigned memest_dtype_size(enum memest_dtype t);
/* Canonical short name: "fp32", "fp16", "bf16", "fp64", "int64", ... */
const char *memest_dtype_name(enum memest_dtype t);
bool memest_dtype_is_float(enum memest_dtype t);
/* fp16 or bf16: the 16-bit floating types (autocast's, the mixed-precision
 * engines', those that accumulate in fp32). */
bool memest_dtype_is_half(enum memest_dtype t);
/* Accepts the short names and PyTorch's ("float32", "float", "half",
 * "bfloat16", "long", ...). Returns 0, or -1 for an unknown name. */
int memest_dtype_parse(const char *s, enum memest_dtype *out);
/* Comma-separated list of accepted names, for error messages. */
const char *memest_dtype_names(void);
