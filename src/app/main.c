/* main.c - the memest executable: the command itself is memest_main()
 * (src/app/memest_main.c, in the core library), which flushes and checks
 * standard output; closing it is checked here, once the process is done
 * with it (some file systems report a failed write only at close). */
/* sbrk() and MADV_HUGEPAGE: BSD/SVID interfaces, beside the POSIX ones
 * the build asks for */
#define _DEFAULT_SOURCE

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memest/app.h"

#if defined(M_TOP_PAD) && defined(MADV_HUGEPAGE)
/* The heap's first HEAP_PAD bytes in transparent huge pages: an estimate
 * touches its memory once, and a page fault per 4 KiB page costs more than
 * the work done in it (measured: 11 us per fault on a 2-core VM, where the
 * Llama-3.1-405B config's 1,500 faults took half its time). The heap is
 * grown by the pad at once (M_TOP_PAD: address space, not memory), and the
 * kernel asked to back it with 2 MiB pages where its transparent huge pages
 * are in `madvise` mode (in `always` mode it does so anyway; in `never`,
 * this does nothing). Pages are still committed only when touched, 2 MiB
 * at a time. A hint: when the heap cannot grow by the pad, malloc goes on
 * as without it. */
#define HEAP_PAD ((size_t)1 << 30)

static void *volatile heap_head;   /* the heap below its first huge page, unused */

static void heap_hugepages(void)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    char *lo = sbrk(0);
    mallopt(M_TOP_PAD, (int)HEAP_PAD);
    void *volatile first = malloc(1 << 20);   /* the heap's first growth: the pad */
    free(first);
    char *hi = sbrk(0);
    mallopt(M_TOP_PAD, 128 << 10);   /* glibc's default again for later growth */
    if (lo == (char *)-1 || hi == (char *)-1 || hi <= lo)
        return;
    uintptr_t a = ((uintptr_t)lo + huge - 1) & ~(huge - 1), b = (uintptr_t)hi & ~(huge - 1);
    if (b <= a || madvise((void *)a, b - a, MADV_HUGEPAGE) != 0)
        return;
    /* the heap below the first 2 MiB boundary would be 4 KiB pages: one
     * block covers it, kept and never touched (no memory, no faults) */
    char *p = malloc(64);
    if (p && (uintptr_t)p < a && a - (uintptr_t)p > 4096) {
        size_t gap = a - (uintptr_t)p - 64;
        free(p);
        heap_head = malloc(gap);
    } else {
        free(p);
    }
}
#endif

int main(int argc, char **argv)
{
#if defined(M_MMAP_MAX) && defined(M_TRIM_THRESHOLD)
    /* Keep freed memory for the next estimate instead of returning it to
     * the system: a sweep, --max-batch or --advise allocates the same large
     * arrays once per estimate, and the page faults of fresh memory cost
     * more than the simulation itself (glibc; a hint, failure is harmless). */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
#if defined(M_TOP_PAD) && defined(MADV_HUGEPAGE)
    heap_hugepages();
#endif
    int rc = memest_main(argc, argv);
    errno = 0;
    if (fclose(stdout) != 0 && errno != EBADF)
        rc = memest_stdout_failed(rc, errno);
    return rc;
}
