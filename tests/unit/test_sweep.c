/* test_sweep.c - the LIST grammar of --sweep / --sweep-var (values written
 * out by hand), and the --max-batch search against a brute-force scan. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memest/fit.h"
#include "memest/sweep.h"

static int parse(const char *s, struct memest_sweep_list *l, struct memest_error *err)
{
    memset(err, 0, sizeof *err);
    return memest_sweep_parse(s, "--sweep", l, err);
}

static void expect(const char *s, const int64_t *want, size_t n)
{
    struct memest_sweep_list l;
    struct memest_error err;
    int rc = parse(s, &l, &err);
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "  list '%s': %s\n", s, err.msg);
        return;
    }
    CHECK_EQ_U64(l.n, n);
    for (size_t i = 0; i < n && i < l.n; i++)
        CHECK_EQ_INT(l.v[i], want[i]);
    memest_sweep_list_free(&l);
}

static void reject(const char *s, const char *why)
{
    struct memest_sweep_list l;
    struct memest_error err;
    CHECK(parse(s, &l, &err) != 0);
    CHECK(err.code == MEMEST_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "--sweep: bad list");
    CHECK_CONTAINS(err.msg, why);
    CHECK(l.v == NULL && l.n == 0);
}

static void test_lists(void)
{
    expect("1,2,8,32", (const int64_t[]){1, 2, 8, 32}, 4);
    expect("32,8", (const int64_t[]){32, 8}, 2);  /* in the order given */
    expect("7", (const int64_t[]){7}, 1);
    expect("1:1024:x2", (const int64_t[]){1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}, 11);
    expect("3:20:x3", (const int64_t[]){3, 9}, 2);          /* 27 > 20 */
    expect("1:10:+3", (const int64_t[]){1, 4, 7, 10}, 4);
    expect("2:11:+3", (const int64_t[]){2, 5, 8, 11}, 4);
    expect("2:12:+3", (const int64_t[]){2, 5, 8, 11}, 4);   /* 14 > 12 */
    expect("5:5:+1", (const int64_t[]){5}, 1);
    expect("5:5:x2", (const int64_t[]){5}, 1);
    expect("9007199254740991", (const int64_t[]){9007199254740991}, 1); /* 2^53 - 1 */
    /* geometric near the top: 2^52 * 2 = 2^53 > END, and no overflow */
    expect("4503599627370496:9007199254740991:x2", (const int64_t[]){4503599627370496}, 1);
    expect("4503599627370496:9007199254740991:x9999999", (const int64_t[]){4503599627370496}, 1);
    expect("9007199254740990:9007199254740991:+9007199254740991",
           (const int64_t[]){9007199254740990}, 1);

    struct memest_sweep_list l;
    struct memest_error err;
    CHECK(parse("1:9007199254740991:x2", &l, &err) == 0);
    CHECK_EQ_U64(l.n, 53); /* 2^0 .. 2^52 */
    CHECK_EQ_INT(l.v[52], (int64_t)1 << 52);
    memest_sweep_list_free(&l);
    CHECK(parse("1:65536:+1", &l, &err) == 0); /* exactly the limit */
    CHECK_EQ_U64(l.n, 65536);
    CHECK_EQ_INT(l.v[65535], 65536);
    memest_sweep_list_free(&l);
}

static void test_rejects(void)
{
    reject("", "empty");
    reject("0", "'0' is not a whole number");
    reject("1,0", "'0' is not a whole number");
    reject("-1", "not a whole number");
    reject("+1", "not a whole number");
    reject(" 1", "not a whole number");
    reject("1 ", "not a whole number");
    reject("1e3", "not a whole number");
    reject("0x10", "not a whole number");
    reject("1.5", "not a whole number");
    reject("1,,2", "'' is not a whole number");
    reject(",1", "not a whole number");
    reject("1,", "not a whole number");
    reject("9007199254740992", "not a whole number");      /* 2^53 */
    reject("99999999999999999999", "not a whole number");  /* past 2^64 */
    reject("1:8", "three parts");
    reject("1:8:x2:3", "three parts");
    reject("1::x2", "not a whole number");
    reject("1:8:2", "xK (geometric) or +K");
    reject("1:8:*2", "xK (geometric) or +K");
    reject("1:8:x", "not a whole number");
    reject("1:8:x1", "K >= 2");
    reject("1:8:+0", "not a whole number");
    reject("8:1:x2", "START is greater than END");
    reject("1:8:x2,16", "cannot be mixed");
    reject("1:65537:+1", "it has 65537 values, more than 65536");
    reject("1:9007199254740991:+1", "more than 65536");
    /* a comma list past the limit */
    size_t n = 65537;
    char *big = malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        big[2 * i] = '1';
        big[2 * i + 1] = ',';
    }
    big[2 * n - 1] = '\0';
    reject(big, "more than 65536");
    free(big);
}

/* ---- max-batch: the search equals a brute-force scan ---- */

/* A synthetic step: the allocated bytes grow steadily (alloc = 100 * b);
 * the reserved total adds rounding that can shrink as b grows: blocks of
 * `seg` bytes, except that past `big` the rounding is to 10 bytes only (as
 * PyTorch's allocator gives large blocks their own, tightly rounded
 * segments). The card has `usable` bytes. */
struct synth {
    int64_t usable, seg, big;
    int calls;
    int64_t fail_at; /* report an error at this batch (0: never) */
    int twice;       /* batches up to 4096 evaluated more than once */
    unsigned char seen[4097];
};

static int64_t reserved(const struct synth *s, int64_t b)
{
    int64_t alloc = 100 * b;
    int64_t unit = alloc > s->big ? 10 : s->seg;
    return (alloc + unit - 1) / unit * unit;
}

static int synth_fits(void *ctx, int64_t b, bool *fits, bool *may_fit, struct memest_error *err)
{
    struct synth *s = ctx;
    s->calls++;
    if (b >= 1 && b <= 4096)
        s->twice += s->seen[b]++ > 0;
    if (s->fail_at && b == s->fail_at)
        return memest_errf(err, MEMEST_ERR_SHAPE, NULL, "boom at %lld", (long long)b);
    *may_fit = b <= s->usable / 100 && 100 * b <= s->usable;
    *fits = reserved(s, b) <= s->usable;
    return 0;
}

static int64_t afford_100(void *ctx)
{
    (void)ctx;
    return 100;
}
static int64_t afford_0(void *ctx)
{
    (void)ctx;
    return 0;
}

static int64_t brute(struct synth *s, int64_t limit)
{
    int64_t last = 0;
    for (int64_t b = 1; b <= limit; b++)
        if (reserved(s, b) <= s->usable)
            last = b;
    return last;
}

static void test_max_batch(void)
{
    /* steady growth (seg 1: no rounding): the answer is usable / 100 */
    static const int64_t limits[] = {1, 2, 3, 7, 100, 4096, 9007199254740991};
    static const int64_t usables[] = {0, 99, 100, 250, 6400, 6500, 409600, 100000000000,
                                      900719925474099100};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        for (size_t j = 0; j < sizeof usables / sizeof *usables; j++) {
            struct synth s = {.usable = usables[j], .seg = 1, .big = INT64_MAX, .fail_at = 0};
            int64_t lim = limits[i], want = usables[j] / 100 < lim ? usables[j] / 100 : lim;
            struct memest_max_batch mb;
            struct memest_error err = {0};
            CHECK(memest_fit_max_batch(synth_fits, NULL, &s, lim, &mb, &err) == 0);
            CHECK_EQ_INT(mb.best, want);
            CHECK_EQ_INT(mb.steady, want);
            CHECK_EQ_INT(mb.bound, want);
            CHECK(!mb.capped);
            CHECK_EQ_INT(mb.calls, s.calls);
            CHECK(mb.calls <= 2 * (2 * 54 + 2)); /* two O(log limit) searches, no scan */
        }
    }
    /* uneven growth, by hand: 2000-byte blocks up to 5000 allocated bytes,
     * 10-byte rounding above; usable 5500. b = 1..20 reserve 2000, b = 21..40
     * 4000: fit; b = 41..50 allocate 4100..5000, reserved 6000: no;
     * b = 51..55 allocate 5100..5500, rounded to 10: fit again; 56: no. */
    struct synth s = {.usable = 5500, .seg = 2000, .big = 5000, .fail_at = 0};
    struct memest_max_batch mb;
    struct memest_error err = {0};
    CHECK(memest_fit_max_batch(synth_fits, NULL, &s, 4096, &mb, &err) == 0);
    CHECK_EQ_INT(mb.best, 55);
    CHECK_EQ_INT(mb.steady, 40);
    CHECK_EQ_INT(mb.bound, 55);
    CHECK_EQ_INT(brute(&s, 4096), 55);
    /* the second search and the scan reuse what the searches evaluated:
     * no batch is evaluated twice */
    CHECK_EQ_INT(s.twice, 0);
    CHECK_EQ_INT(mb.calls, s.calls);
    /* many shapes of unevenness, against brute force */
    for (int64_t usable = 0; usable <= 12000; usable += 137) {
        for (int64_t seg = 1; seg <= 4096; seg *= 4) {
            for (int64_t big = 0; big <= 12000; big += 2999) {
                struct synth t = {.usable = usable, .seg = seg, .big = big, .fail_at = 0};
                CHECK(memest_fit_max_batch(synth_fits, NULL, &t, 300, &mb, &err) == 0);
                int64_t want = brute(&t, 300);
                CHECK_EQ_INT(mb.best, want);
                if (mb.best != want)
                    fprintf(stderr, "  usable %lld seg %lld big %lld\n", (long long)usable,
                            (long long)seg, (long long)big);
            }
        }
    }
    /* a gap wider than the scan limit is capped, not searched for ever */
    struct synth wide = {.usable = 100LL * 200000, .seg = 100LL * 120000,
                         .big = 100LL * 199990, .fail_at = 0};
    CHECK(memest_fit_max_batch(synth_fits, NULL, &wide, 1000000, &mb, &err) == 0);
    CHECK(mb.capped);
    CHECK(mb.calls <= MEMEST_MAX_BATCH_SCAN + 200);
    CHECK_EQ_INT(mb.best, brute(&wide, 1000000)); /* here the answer is near the top */
    /* a caller that affords no more calls (its work budget) after the two
     * searches gets no scan: steady, capped; one that affords 100 gets a scan
     * of at most 100 batches from the top (which finds the answer here) */
    struct synth none = wide;
    none.calls = 0;
    CHECK(memest_fit_max_batch(synth_fits, afford_0, &none, 1000000, &mb, &err) == 0);
    int searches = mb.calls;
    CHECK(mb.capped);
    CHECK_EQ_INT(mb.scan_max, 0);
    CHECK_EQ_INT(mb.best, mb.steady);
    CHECK(mb.best < brute(&wide, 1000000));
    struct synth some = wide;
    some.calls = 0;
    CHECK(memest_fit_max_batch(synth_fits, afford_100, &some, 1000000, &mb, &err) == 0);
    CHECK(mb.capped);
    CHECK_EQ_INT(mb.scan_max, 100);
    /* (the searches evaluated the top, which fits: the scan reuses it) */
    CHECK(mb.calls >= searches && mb.calls <= searches + 100);
    CHECK_EQ_INT(mb.best, brute(&wide, 1000000));
    /* errors propagate */
    struct synth bad = {.usable = 10000, .seg = 1, .big = INT64_MAX, .fail_at = 8};
    memset(&err, 0, sizeof err);
    CHECK(memest_fit_max_batch(synth_fits, NULL, &bad, 4096, &mb, &err) == -1);
    CHECK_CONTAINS(err.msg, "boom at 8");
}

int main(void)
{
    test_lists();
    test_rejects();
    test_max_batch();
    return CHECK_DONE();
}
