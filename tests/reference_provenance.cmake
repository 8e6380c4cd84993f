# Every file of tests/reference/ starts with its provenance (tests/README.md,
# "Reference files"; written by the generators through tests/tools/provenance.py):
#   .json  a top-level object "provenance": {"generator": a string,
#          "libraries": a non-empty object of name -> version, "date": YYYY-MM-DD}
#   .md    a first line <!-- provenance: generator G; libraries L; date YYYY-MM-DD -->
#   .txt   a first line # provenance: generator G; libraries L; date YYYY-MM-DD
# Any other file there is an error too.
#   cmake -DDIR=tests/reference -P reference_provenance.cmake
file(GLOB files LIST_DIRECTORIES false ${DIR}/*)
if(NOT files)
  message(FATAL_ERROR "${DIR}: no reference files")
endif()
set(line_re "provenance: generator [^;]+; libraries [^;]+; date [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]")
set(bad "")
foreach(f ${files})
  get_filename_component(name ${f} NAME)
  if(name MATCHES "\\.json$")
    file(READ ${f} doc)
    string(JSON gen ERROR_VARIABLE e1 GET "${doc}" provenance generator)
    string(JSON ltype ERROR_VARIABLE e2 TYPE "${doc}" provenance libraries)
    string(JSON nlib ERROR_VARIABLE e3 LENGTH "${doc}" provenance libraries)
    string(JSON date ERROR_VARIABLE e4 GET "${doc}" provenance date)
    if(e1 OR e2 OR e3 OR e4 OR gen STREQUAL "" OR NOT ltype STREQUAL "OBJECT" OR nlib EQUAL 0
       OR NOT date MATCHES "^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$")
      list(APPEND bad "${name}: no \"provenance\" {generator, libraries, date} object")
    endif()
  elseif(name MATCHES "\\.(md|txt)$")
    file(STRINGS ${f} first LIMIT_COUNT 1)
    if(name MATCHES "\\.md$")
      set(want "^<!-- ${line_re} -->$")
    else()
      set(want "^# ${line_re}$")
    endif()
    if(NOT first MATCHES "${want}")
      list(APPEND bad "${name}: the first line is not its provenance comment")
    endif()
  else()
    list(APPEND bad "${name}: not .json, .md or .txt, so no provenance header is defined for it")
  endif()
endforeach()
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "reference files without their provenance (tests/tools/provenance.py):\n  ${text}")
endif()
list(LENGTH files n)
message(STATUS "${n} reference files, each with its provenance")
