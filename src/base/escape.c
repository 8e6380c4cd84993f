/* escape.c - outside strings made safe for text, CSV and XML output (the
 * rules are in escape.h). */
#include "memest/escape.h"

#include <limits.h>
#include <string.h>

size_t memest_utf8_decode(const char *s, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0];
    *cp = c;
    if (c < 0x80)
        return 1;
    size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (len == 0)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)   /* also stops at the terminating NUL */
            return 0;
    if ((len == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0))) ||
        (len == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90))))
        return 0;   /* overlong, surrogate, past U+10FFFF */
    uint32_t v = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++)
        v = v << 6 | (p[i] & 0x3f);
    *cp = v;
    return len;
}

bool memest_char_unsafe(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0xfffe || cp == 0xffff;
}

/* The next character of s (not at its end): its length in bytes, and
 * whether it is shown as \xNN escapes (one per byte). */
static size_t next_char(const char *s, bool *esc)
{
    uint32_t cp;
    size_t len = memest_utf8_decode(s, &cp);
    *esc = len == 0 || memest_char_unsafe(cp);
    return len ? len : 1;
}

static void put_escaped(FILE *f, const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        fprintf(f, "\\x%02X", (unsigned char)p[i]);
}

bool memest_esc_append(char *buf, size_t n, size_t *pos, const char *s)
{
    if (*pos >= n)
        return false;
    for (const char *p = s; *p;) {
        bool esc;
        size_t len = next_char(p, &esc), need = esc ? 4 * len : len;
        if (n - *pos <= need) {   /* the character and the NUL do not fit */
            *pos = n;
            return false;
        }
        for (size_t i = 0; i < len; i++) {
            if (esc) {
                snprintf(buf + *pos, 5, "\\x%02X", (unsigned char)p[i]);
                *pos += 4;
            } else {
                buf[(*pos)++] = p[i];
            }
        }
        buf[*pos] = '\0';
        p += len;
    }
    return true;
}

const char *memest_esc_text(const char *s, char *buf, size_t n)
{
    size_t pos = 0;
    buf[0] = '\0';
    if (memest_esc_append(buf, n, &pos, s))
        return buf;
    pos = 0;
    buf[0] = '\0';
    memest_esc_append(buf, n - 3, &pos, s);
    size_t len = strlen(buf);
    memcpy(buf + len, "...", 4);
    return buf;
}

void memest_esc_csv(FILE *f, const char *s)
{
    /* escaping writes no comma or quote and leaves no CR or LF: the field
     * as written has one of RFC 4180's four characters when s has , or " */
    bool quote = strpbrk(s, ",\"") != NULL;
    if (quote)
        fputc('"', f);
    for (const char *p = s; *p;) {
        bool esc;
        size_t len = next_char(p, &esc);
        if (esc)
            put_escaped(f, p, len);
        else if (*p == '"')
            fputs("\"\"", f);
        else
            fwrite(p, 1, len, f);
        p += len;
    }
    if (quote)
        fputc('"', f);
}

void memest_esc_xml(FILE *f, const char *s, size_t max_chars)
{
    size_t count = 0;
    for (const char *p = s; *p; count++) {
        if (count == max_chars) {
            fputs("\xe2\x80\xa6", f);
            return;
        }
        bool esc;
        size_t len = next_char(p, &esc);
        if (esc) {
            put_escaped(f, p, len);
        } else {
            switch (*p) {
            case '&': fputs("&amp;", f); break;
            case '<': fputs("&lt;", f); break;
            case '>': fputs("&gt;", f); break;
            case '"': fputs("&quot;", f); break;
            case '\'': fputs("&apos;", f); break;
            default: fwrite(p, 1, len, f);
            }
        }
        p += len;
    }
}

int memest_utf8_prefix(const char *s, size_t max)
{
    size_t len = strnlen(s, max + 1);
    if (len > max) {
        len = max;
        /* back to the start of the sequence that the cut would split */
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    return len > INT_MAX ? INT_MAX : (int)len;
}
