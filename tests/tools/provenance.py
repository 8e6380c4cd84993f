"""The provenance header every file of tests/reference/ starts with: the generator, the library versions it
ran with and the date (checked by tests/reference_provenance.cmake, the ctest docs.reference_provenance).

In a JSON file it is the top-level object "provenance": {"generator", "libraries" (name -> version),
"date" (YYYY-MM-DD)}, the first key; in a Markdown file the first line, an HTML comment; in a text file the
first line, a '#' comment:

    <!-- provenance: generator tests/tools/saved_catalog.py; libraries torch 1.13.0a0; date 2026-11-25 -->
    # provenance: generator tests/tools/ops_b_saved.py; libraries torch 2.6.0+debian; date 2026-11-25

A library that a generator replicates rather than imports is named with the version followed.
"""
import datetime
import json


def provenance(generator, libraries):
    """The "provenance" object: `generator` (its path, tests/tools/NAME.py), `libraries` ({name: version})."""
    return {"generator": generator, "libraries": dict(libraries), "date": datetime.date.today().isoformat()}


def stamp(doc, generator, libraries):
    """`doc` (a dict) with "provenance" as its first key."""
    return {"provenance": provenance(generator, libraries), **{k: v for k, v in doc.items() if k != "provenance"}}


def write_json(path, doc, generator, libraries):
    """Writes `doc` stamped (stamp()) to `path` as the reference files are: indent 1, a final newline."""
    with open(path, "w") as f:
        json.dump(stamp(doc, generator, libraries), f, indent=1)
        f.write("\n")


def line(generator, libraries, markdown=True):
    """The first line of a Markdown (HTML comment) or text ('#' comment) reference file, without newline."""
    p = provenance(generator, libraries)
    text = "provenance: generator %s; libraries %s; date %s" % (
        p["generator"], ", ".join("%s %s" % kv for kv in p["libraries"].items()), p["date"])
    return "<!-- %s -->" % text if markdown else "# " + text
