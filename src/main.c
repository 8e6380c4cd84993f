/* main.c - the memest executable: the command itself is memest_main()
 * (src/memest_main.c, in the core library). */
#include "memest/app.h"

int main(int argc, char **argv)
{
    return memest_main(argc, argv);
}
