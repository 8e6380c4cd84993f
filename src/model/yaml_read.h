/* yaml_read.h - YAML text into the cJSON tree a JSON file gives, within a
 * budget (src/model/yaml_read.c; private to src/model): what accelerate's
 * config files are read with. */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>

#include "memest/error.h"

/* The budget of one YAML file (doc/robustness.md, "Limits and cost"): the nodes made, an
 * alias counting every node it stands for each time it is used, and the
 * nesting of mappings and sequences. Past either the file is refused with
 * its line, while it is read (a "billion laughs" costs what its first
 * MB_YAML_MAX_NODES nodes cost). */
#define MB_YAML_MAX_NODES 100000
#define MB_YAML_MAX_DEPTH 32

/* Parses text[0..len) (text[len] == '\0') as ONE YAML document, as PyYAML's
 * yaml.safe_load reads it (the regular expressions of PyYAML's Resolver,
 * YAML 1.1: plain true/yes/on and false/no/off in three spellings are
 * booleans; ~, null and nothing are null; decimal, octal (a leading 0),
 * hex (0x), binary (0b) and base-60 (1:30) integers, with '_' between
 * digits; reals with a '.', and an exponent only with its sign (1.0e+3);
 * quoted scalars and everything else are strings), into *out (the caller deletes
 * it; null for an empty stream). Refused, as MEMEST_ERR_PARSE with the line
 * and column: malformed YAML, a second document, a tag safe_load would not
 * construct (!!python/..., a local !tag), a merge key (<<), a mapping key
 * that is not a scalar, a key given twice, an infinite or NaN number, an
 * undefined or recursive alias; past the budget, MEMEST_ERR_LIMIT. err
 * names `label`. 0 / -1. */
int mb_yaml_parse(const char *text, size_t len, const char *label, cJSON **out,
                  struct memest_error *err);
