/* reference_json.h - reads a committed reference figure file
 * (under tests/reference/) for the tests that compare against PyTorch. */
#pragma once

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

/* The parsed file, or NULL when it cannot be read or parsed. */
static inline cJSON *read_reference_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf) {
        fclose(f);
        return NULL;
    }
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    return j;
}
