/* format.h - human number formats and strict number parsing for the CLI. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* "97.49 MiB", "512 B" (IEC units). Returns buf. */
char *memest_fmt_bytes(uint64_t bytes, char *buf, size_t n);
/* "25,557,032". Returns buf. */
char *memest_fmt_count(uint64_t v, char *buf, size_t n);
/* "4.09 G" (SI prefixes up to E; three significant digits). Returns buf. */
char *memest_fmt_si(double v, char *buf, size_t n);

/* Parses a whole unsigned decimal integer in [lo, hi] with strtoull:
 * no sign, no spaces, no trailing text. 0 / -1. */
int memest_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* Parses a finite decimal number in [lo, hi] with strtod. 0 / -1. */
int memest_parse_double(const char *s, double lo, double hi, double *out);
/* Parses a size: plain bytes or a number with one of B, KB, MB, GB, TB
 * (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. "24GiB",
 * "500MiB", "1.5GB". The result must be a whole number of bytes below 2^63.
 * 0 / -1. */
int memest_parse_size(const char *s, uint64_t *out);
