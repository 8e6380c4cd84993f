/* graph_json.h - the expanded graph written back as a memest model file:
 * flat (no blocks, repeats, conditions or variables), every node named by
 * its full name ("layer1.0.conv1"), with explicit inputs and exactly the
 * arguments the file gave (values evaluated, defaults left to the builder).
 * Building the result gives the same graph, node for node, so every figure
 * is the same (tests/unit/test_metamorphic.c and the fuzzer check it); only
 * what needs blocks (--checkpoint) sees a difference.
 *
 *   cJSON *flat = memest_graph_to_json(&g);
 *   char *text = cJSON_Print(flat);  ...  cJSON_Delete(flat);
 */
#pragma once

#include "memest/graph.h"

struct cJSON;

/* The model file of g; NULL when out of memory. The caller frees it with
 * cJSON_Delete(). Numbers are raw items (cJSON_IsRaw), written so that
 * they read back exactly: print the document, do not read their values. A full name longer than the builder allows for a name
 * (100 bytes; nested blocks make long ones) is written as it is: building
 * the result then fails on that name. */
struct cJSON *memest_graph_to_json(const struct memest_graph *g);
