/* check.h - a tiny assertion kit for memest's unit tests. Each failed check
 * prints "file:line: ..." to stderr and is counted; a test's main() ends with
 * `return CHECK_DONE();`, which prints a summary and returns non-zero when
 * anything failed. One header, no library: include it in one test file. */
#pragma once

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static inline int *check_counter_(int which)
{
    static int counts[2]; /* [0] checks run, [1] checks failed */
    return &counts[which];
}

static inline void check_fail_(const char *file, int line)
{
    ++*check_counter_(1);
    fprintf(stderr, "%s:%d: check failed: ", file, line);
}

/* Passes when cond is true. */
#define CHECK(cond)                                                             \
    do {                                                                        \
        ++*check_counter_(0);                                                   \
        if (!(cond)) {                                                          \
            check_fail_(__FILE__, __LINE__);                                    \
            fprintf(stderr, "%s\n", #cond);                                     \
        }                                                                       \
    } while (0)

/* Passes when two unsigned 64-bit values are equal; prints both otherwise. */
#define CHECK_EQ_U64(a, b)                                                      \
    do {                                                                        \
        uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b);            \
        ++*check_counter_(0);                                                   \
        if (check_a_ != check_b_) {                                             \
            check_fail_(__FILE__, __LINE__);                                    \
            fprintf(stderr, "%s == %s: %" PRIu64 " != %" PRIu64 "\n", #a, #b,   \
                    check_a_, check_b_);                                        \
        }                                                                       \
    } while (0)

/* Passes when two signed integers are equal. */
#define CHECK_EQ_INT(a, b)                                                      \
    do {                                                                        \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);         \
        ++*check_counter_(0);                                                   \
        if (check_a_ != check_b_) {                                             \
            check_fail_(__FILE__, __LINE__);                                    \
            fprintf(stderr, "%s == %s: %lld != %lld\n", #a, #b, check_a_,       \
                    check_b_);                                                  \
        }                                                                       \
    } while (0)

/* Passes when two strings are equal (NULL equals only NULL). */
#define CHECK_STR_EQ(a, b)                                                      \
    do {                                                                        \
        const char *check_a_ = (a), *check_b_ = (b);                            \
        ++*check_counter_(0);                                                   \
        if (!(check_a_ == check_b_ ||                                           \
              (check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0))) {     \
            check_fail_(__FILE__, __LINE__);                                    \
            fprintf(stderr, "%s == %s:\n  got:      \"%s\"\n  expected: \"%s\"\n", \
                    #a, #b, check_a_ ? check_a_ : "(null)",                     \
                    check_b_ ? check_b_ : "(null)");                            \
        }                                                                       \
    } while (0)

/* Passes when string `hay` contains `needle`. */
#define CHECK_CONTAINS(hay, needle)                                             \
    do {                                                                        \
        const char *check_h_ = (hay), *check_n_ = (needle);                     \
        ++*check_counter_(0);                                                   \
        if (!check_h_ || !strstr(check_h_, check_n_)) {                         \
            check_fail_(__FILE__, __LINE__);                                    \
            fprintf(stderr, "%s contains \"%s\":\n  got: \"%s\"\n", #hay,       \
                    check_n_, check_h_ ? check_h_ : "(null)");                  \
        }                                                                       \
    } while (0)

/* Summary line; returns 0 when every check passed, else 1. */
#define CHECK_DONE() check_done_(__FILE__)

static inline int check_done_(const char *file)
{
    int run = *check_counter_(0), failed = *check_counter_(1);
    fprintf(stderr, "%s: %d checks, %d failed\n", file, run, failed);
    return failed ? 1 : 0;
}
