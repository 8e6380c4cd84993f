/* main.c - the memest executable: the command itself is memest_main()
 * (src/memest_main.c, in the core library), which flushes and checks
 * standard output; closing it is checked here, once the process is done
 * with it (some file systems report a failed write only at close). */
#include <errno.h>
#include <stdio.h>

#include "memest/app.h"

int main(int argc, char **argv)
{
    int rc = memest_main(argc, argv);
    errno = 0;
    if (fclose(stdout) != 0 && errno != EBADF)
        rc = memest_stdout_failed(rc, errno);
    return rc;
}
