/* safetensors_internal.h - what the checkpoint's reader (safetensors.c)
 * and its check against the model (safetensors_check.c) share. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "memest/error.h"

/* An error about tensor `tensor` (the error's path; may be NULL) of file
 * `file`: "FILE: TENSOR: MESSAGE". Returns -1. */
int mb_st_fail(struct memest_error *err, const char *file, const char *tensor,
               enum memest_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* "[11008, 4096]" (shape.h's format) into buf; returns buf. */
const char *mb_st_dims(int ndim, const int64_t *size, char *buf, size_t n);
