/* escape.h - strings from outside (the model file's "name" and node names,
 * file paths, a driver's device name) made safe for where memest prints
 * them: a terminal or text report, a CSV field, XML (the --plot SVG), JSON.
 *
 * "Unsafe" characters are those that can drive a terminal, break a line or
 * reorder what is displayed, or are not allowed in XML 1.0: C0 controls
 * (tab and newline included), DEL, C1 controls (U+0080-U+009F), the
 * Unicode bidirectional controls (U+200E, U+200F, U+202A-U+202E,
 * U+2066-U+2069), the line and paragraph separators (U+2028, U+2029), the
 * noncharacters U+FFFE and U+FFFF, and every byte that does not start a
 * well-formed UTF-8 sequence. Text, CSV and XML show each byte of an unsafe
 * character as \xNN (as error messages do); JSON writes \u escapes
 * (src/base/jsonw.c). The rest is copied, and cuts fall only between characters. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Buffer size for one escaped name in a text report: a node name of 100
 * bytes escapes to at most 400; longer strings are cut with "...". */
#define MEMEST_ESC_NAME 512

/* Length (1 to 4) of the well-formed UTF-8 sequence at s (no overlong
 * form, no surrogate, at most U+10FFFF), its code point in *cp; 0 when s
 * does not start one (*cp is then the byte). s must be NUL-terminated. */
size_t memest_utf8_decode(const char *s, uint32_t *cp);

/* The length of the longest prefix of s of at most max bytes that ends
 * between two UTF-8 sequences: for "%.*s" in messages, so that a cut name
 * never ends in half a character. */
int memest_utf8_prefix(const char *s, size_t max);

/* Whether code point cp is unsafe (above). */
bool memest_char_unsafe(uint32_t cp);

/* Appends s escaped as text at buf[*pos] (buf holds n bytes and stays
 * terminated). Returns true when all of s fitted; otherwise stops between
 * two characters, sets *pos to n (the mark of a cut) and returns false. */
bool memest_esc_append(char *buf, size_t n, size_t *pos, const char *s);

/* s escaped as text into buf[n] (n >= 4), cut with "..." when it does not
 * fit. Returns buf. */
const char *memest_esc_text(const char *s, char *buf, size_t n);

/* One CSV field (RFC 4180): s escaped as text, then quoted, with quotes
 * doubled, when the field holds a comma, a quote, a CR or an LF (escaping
 * leaves no line break, so: when s holds a comma or a quote). The one rule
 * of every CSV field memest writes. */
void memest_esc_csv(FILE *f, const char *s);

/* XML character data or attribute value: s escaped as text, then & < > " '
 * as entities. At most max_chars characters of s are written (one shown as
 * \xNN escapes counts as one), then U+2026 (an ellipsis) when s is longer. The
 * result is well-formed UTF-8 with only XML 1.0 characters. */
void memest_esc_xml(FILE *f, const char *s, size_t max_chars);
