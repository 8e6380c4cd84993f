/* format.h - human number formats, and the one strict decimal number
 * syntax of the command line and of expression literals:
 *
 *   DIGITS [. [DIGITS]] [(e|E) [+|-] DIGITS]    or    . DIGITS [exponent]
 *
 * decimal only: no hex, no "inf" or "nan", no spaces, no leading '+'; a '-'
 * sign only where a value may be negative (a --set value). An integer is
 * written with digits only; a real may have a fraction and an exponent. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The one IEC byte format: bytes below 1024 as "512 B"; others in the
 * largest unit up to EiB in which the figure, rounded to `decimals`
 * decimals (0 to 4), stays below 1024: "97.49 MiB", "39.4 GiB", and "1.0
 * MiB" rather than "1024.0 KiB". Returns buf. */
char *memest_fmt_iec(uint64_t bytes, int decimals, char *buf, size_t n);
/* memest_fmt_iec with two decimals, the reports' default. Returns buf. */
char *memest_fmt_bytes(uint64_t bytes, char *buf, size_t n);
/* "25,557,032". Returns buf. */
char *memest_fmt_count(uint64_t v, char *buf, size_t n);
/* "4.09 G" (SI prefixes up to E; three significant digits). Returns buf. */
char *memest_fmt_si(double v, char *buf, size_t n);

/* v written so that it reads back as the same double: the shortest of
 * %.15g, %.16g and %.17g that round-trips ("3.0000000000000004", "0.1",
 * "1e+300"). For values in messages. Returns buf (24 bytes are enough). */
char *memest_fmt_double(double v, char *buf, size_t n);

/* The number written at the start of s (no sign), as memest_decimal_read
 * finds it. */
struct memest_decimal {
    size_t len;     /* characters taken; 0: s does not start with a number */
    bool is_int;    /* written with digits only */
    bool exponent;  /* written with an exponent */
    bool int_ok;    /* is_int, and at most INT64_MAX: i holds it */
    bool real_ok;   /* d holds it: finite, and not so small that it underflows */
    int64_t i;
    double d;
};
/* Reads the longest number in the syntax above at the start of s. Never
 * reads past the number's end; the caller decides what may follow it. */
void memest_decimal_read(const char *s, struct memest_decimal *out);

/* Parses a whole integer in [lo, hi] (lo, hi <= INT64_MAX) written with
 * digits only: no sign, no spaces, no trailing text. 0 / -1. */
int memest_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* Parses a number in [lo, hi]: a '-' sign when lo < 0, then an integer or a
 * real in the syntax above. 0 / -1. */
int memest_parse_double(const char *s, double lo, double hi, double *out);
/* Parses a size: plain bytes (digits only) or a number without exponent
 * followed by one of B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB
 * (powers of 1024), e.g. "24GiB", "500MiB", "1.5GB". The result must be a
 * whole number of bytes below 2^63. 0 / -1. */
int memest_parse_size(const char *s, uint64_t *out);
