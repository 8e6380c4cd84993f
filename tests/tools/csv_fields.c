/* csv_fields.c - a strict RFC 4180 reader for the tests, independent of
 * memest's writer: `csv_fields FILE COL` parses FILE (fields separated by
 * commas, records by LF or CRLF; a field is either unquoted, without quotes
 * or line breaks, or quoted, with quotes doubled), checks that every record
 * has as many fields as the first (the header), and prints field COL
 * (1-based, unquoted) of every record after the header, one per line.
 * Exit 0, or 1 with a message on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *file, long rec, const char *why)
{
    fprintf(stderr, "csv_fields: %s: record %ld: %s\n", file, rec, why);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: csv_fields FILE COL\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    long col = strtol(argv[2], NULL, 10), rec = 1, nfield = 1, header = -1;
    char field[4096];
    size_t len = 0;
    int c = fgetc(f);
    if (c == EOF)
        return fail(argv[1], rec, "empty file");
    while (c != EOF) {
        len = 0;
        if (c == '"') { /* quoted field */
            for (;;) {
                c = fgetc(f);
                if (c == EOF)
                    return fail(argv[1], rec, "unterminated quoted field");
                if (c == '"') {
                    c = fgetc(f);
                    if (c != '"')
                        break;
                }
                if (len + 1 < sizeof field)
                    field[len++] = (char)c;
            }
        } else {
            while (c != ',' && c != '\n' && c != '\r' && c != EOF) {
                if (c == '"')
                    return fail(argv[1], rec, "quote inside an unquoted field");
                if (len + 1 < sizeof field)
                    field[len++] = (char)c;
                c = fgetc(f);
            }
        }
        field[len] = '\0';
        if (header >= 0 && nfield == col)
            printf("%s\n", field);
        if (c == ',') {
            nfield++;
            c = fgetc(f);
            continue;
        }
        if (c == '\r' && (c = fgetc(f)) != '\n')
            return fail(argv[1], rec, "CR not followed by LF");
        if (c != '\n')
            return fail(argv[1], rec, c == EOF ? "no line end after the last record"
                                               : "text after a quoted field");
        if (header < 0)
            header = nfield;
        else if (nfield != header)
            return fail(argv[1], rec, "not as many fields as the header");
        rec++;
        nfield = 1;
        c = fgetc(f);
    }
    fclose(f);
    return 0;
}
