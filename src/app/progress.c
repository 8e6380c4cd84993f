/* progress.c - progress lines on a terminal's standard error (progress.h). */
#include "memest/progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memest/escape.h"

enum { PERIOD_NS = 100000000 };   /* a line at most every tenth of a second */

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void memest_progress_begin(struct memest_progress *p, const char *what, const char *unit,
                           uint64_t total)
{
    memset(p, 0, sizeof *p);
    p->on = isatty(STDERR_FILENO) == 1;
    p->what = what;
    p->unit = unit;
    p->total = total;
    pthread_mutex_init(&p->lock, NULL);
}

void memest_progress_update(struct memest_progress *p, uint64_t done, const char *note)
{
    if (!p->on || pthread_mutex_trylock(&p->lock) != 0)
        return;
    int64_t t = now_ns();
    if (!p->shown || t - p->last_ns >= PERIOD_NS) {
        char line[160], esc[MEMEST_ESC_NAME];
        int n = p->total
                    ? snprintf(line, sizeof line, "memest: %s: %llu/%llu %s", p->what,
                               (unsigned long long)done, (unsigned long long)p->total, p->unit)
                    : snprintf(line, sizeof line, "memest: %s: %llu %s", p->what,
                               (unsigned long long)done, p->unit);
        if (note && n > 0 && (size_t)n < sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n, ", %s",
                          memest_esc_text(note, esc, sizeof esc));
        if (n > (int)sizeof line - 1)
            n = (int)sizeof line - 1;
        /* the new line over the old one, blanks over what it left */
        fprintf(stderr, "\r%s%*s", line, p->width > n ? p->width - n : 0, "");
        fflush(stderr);
        p->width = n;
        p->shown = true;
        p->last_ns = t;
    }
    pthread_mutex_unlock(&p->lock);
}

void memest_progress_end(struct memest_progress *p)
{
    if (!p->what)   /* ended already */
        return;
    if (p->on && p->shown) {
        fprintf(stderr, "\r%*s\r", p->width, "");
        fflush(stderr);
    }
    p->shown = false;
    p->width = 0;
    p->what = NULL;
    pthread_mutex_destroy(&p->lock);
}
