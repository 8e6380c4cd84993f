/* sim_error.c - the simulator's one shared error: the host out of memory
 * (sim_internal.h), which every part of it reports the same way. */
#include "sim_internal.h"

int sim_nomem(struct sim *S)
{
    return memest_errf(S->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
}
