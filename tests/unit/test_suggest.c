/* test_suggest.c - "did you mean" (suggest.h): the nearest name by edit
 * distance, and the clause messages end with. Expected strings are written
 * out by hand from the rules in suggest.h. */
#include <string.h>

#include "check.h"
#include "memest/suggest.h"

int main(void)
{
    static const char *const keys[] = {"inputs", "layers", "blocks"};
    /* "inptus": two edits from "inputs" (a swap), within 1 + 6/3 = 3 */
    CHECK_STR_EQ(memest_suggest("inptus", keys, 3), "inputs");
    /* case does not count: "LAYERS" is 0 edits from "layers" */
    CHECK_STR_EQ(memest_suggest("LAYERS", keys, 3), "layers");
    /* "xyz": 3 edits from anything of 6 letters or more, over 1 + 3/3 = 2 */
    CHECK(memest_suggest("xyz", keys, 3) == NULL);
    /* a name of 64 characters or more is near nothing, however long (its
     * bound 1 + 200/3 would otherwise take the first candidate) */
    char longname[201];
    memset(longname, 'w', 200);
    longname[200] = '\0';
    CHECK(memest_suggest(longname, keys, 3) == NULL);

    char buf[64];
    CHECK_STR_EQ(memest_suggest_clause("inputs", buf, sizeof buf), " (did you mean \"inputs\"?)");
    CHECK_STR_EQ(memest_suggest_clause(NULL, buf, sizeof buf), "");
    CHECK_STR_EQ(memest_suggest_clause_sq("t4", buf, sizeof buf), "; did you mean 't4'?");
    CHECK_STR_EQ(memest_suggest_clause_sq(NULL, buf, sizeof buf), "");
    /* a buffer too small cuts the clause: 9 bytes hold its first 8 */
    char small[9];
    CHECK_STR_EQ(memest_suggest_clause("inputs", small, sizeof small), " (did yo");
    return CHECK_DONE();
}
