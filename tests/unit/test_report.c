/* test_report.c - the report layer's dispatchers (report.c): each document
 * goes to its writer for the format asked for, and a format a document is
 * not offered in writes nothing. Expected text written by hand from the
 * documented CSV columns (doc/cards-and-fit.md, "Sweeps"). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memest/report.h"

struct cap {
    char *data;
    size_t len;
    FILE *f;
};

static FILE *cap_open(struct cap *c)
{
    c->data = NULL;
    c->len = 0;
    c->f = open_memstream(&c->data, &c->len);
    return c->f;
}

/* Closes the stream; the caller frees c->data. */
static const char *cap_close(struct cap *c)
{
    fclose(c->f);
    return c->data;
}

static void test_error_document(void)
{
    struct memest_error err = {0};
    memest_errf(&err, MEMEST_ERR_USAGE, NULL, "--csv is for sweeps");
    struct cap c;
    memest_render_error(cap_open(&c), MEMEST_OUTPUT_TEXT, &err);
    CHECK_STR_EQ(cap_close(&c), "");   /* the message on stderr is the CLI's */
    free(c.data);
    memest_render_error(cap_open(&c), MEMEST_OUTPUT_CSV, &err);
    CHECK_STR_EQ(cap_close(&c), "");
    free(c.data);
    memest_render_error(cap_open(&c), MEMEST_OUTPUT_JSON, &err);
    const char *s = cap_close(&c);
    const char *head = "{\n  \"schema_version\": 1,\n  \"error\": {\n    \"code\": \"usage\",\n"
                       "    \"exit\": 2,\n    \"message\": \"--csv is for sweeps\",";
    CHECK(strncmp(s, head, strlen(head)) == 0);
    free(c.data);
}

static void test_sweep_csv(void)
{
    struct memest_sweep_row rows[2] = {
        {.value = 2, .batch = 2, .peak = 1000, .reserved = 2097152, .total_device = 3000,
         .step_flops = 12},
        {.value = 3, .batch = 3, .limit = true, .limit_msg = "too many tensors (more than 2^31)"},
    };
    struct memest_sweep_report s = {.model = "m", .file = "m.json", .optimizer = "adam",
                                    .dtype = "fp32", .rows = rows, .nrows = 2};
    struct cap c;
    memest_render_sweep(cap_open(&c), MEMEST_OUTPUT_CSV, &s);
    /* no least memory searched: "least_device_bytes" empty; no card: "fits"
     * empty; no preset: the three time columns empty; the limit row: ten
     * empty fields but the error, unquoted (no comma or quote in it) */
    CHECK_STR_EQ(cap_close(&c),
                 "batch,peak_bytes,reserved_bytes,total_device_bytes,least_device_bytes,fits,"
                 "step_flops,step_seconds,samples_per_second,memory_bound_fraction,error\n"
                 "2,1000,2097152,3000,,,12,,,,\n"
                 "3,,,,,,,,,,too many tensors (more than 2^31)\n");
    free(c.data);
}

static void test_not_offered(void)
{
    /* --csv is for sweeps (cli.c refuses it elsewhere): nothing is written,
     * and nothing of the documents is read */
    struct cap c;
    memest_render_estimate(cap_open(&c), MEMEST_OUTPUT_CSV, NULL);
    memest_render_max_batch(c.f, MEMEST_OUTPUT_CSV, NULL);
    memest_render_advice(c.f, MEMEST_OUTPUT_CSV, NULL);
    CHECK_STR_EQ(cap_close(&c), "");
    free(c.data);
}

int main(void)
{
    test_error_document();
    test_sweep_csv();
    test_not_offered();
    return CHECK_DONE();
}
