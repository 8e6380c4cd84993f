/* main.c - the memest executable: the command itself is memest_main()
 * (src/app/memest_main.c, in the core library), which flushes and checks
 * standard output; closing it is checked here, once the process is done
 * with it (some file systems report a failed write only at close). */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>

#include "memest/app.h"

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
    int rc = memest_main(argc, argv);
    errno = 0;
    if (fclose(stdout) != 0 && errno != EBADF)
        rc = memest_stdout_failed(rc, errno);
    return rc;
}
