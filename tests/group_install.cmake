# Installing memest like a system tool (the install rules and CPack at the
# end of CMakeLists.txt) and the files generated from its option rows:
#   docs.man_completions  doc/memest.1, doc/memest.bash, doc/_memest and
#                         doc/options.md's tables are what tests/tools/gen_docs.py
#                         writes from this build's memest --dump-options and
#                         --list-gpus (else a diff and the command that
#                         regenerates them)
#   docs.options_agree    the rows, --help all, memest help SUBCOMMAND, the man
#                         page, both completions and doc/options.md name the
#                         same options and subcommands, and every option in a
#                         command line of README.md and doc/*.md is one
#                         (tests/tools/check_options.py, as curl's test 1139);
#                         docs.options_agree_detects: it fails on a doctored
#                         copy
#   docs.man_lint         doc/memest.1 renders without a warning (groff -ww,
#                         man --warnings; tests/install/man_lint.sh)
#   install.prefix        cmake --install into a temporary prefix, then memest,
#                         the man page, both completions and memest-export
#                         work from there (tests/install/prefix.sh; no root)
#   install.deb           cpack -G DEB: Depends and the package's files
#                         (tests/install/deb.sh; needs cpack and dpkg-deb)
find_program(MEMEST_DOCS_PYTHON NAMES python3)
if(MEMEST_DOCS_PYTHON)
  add_test(NAME docs.man_completions
           COMMAND ${MEMEST_DOCS_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/gen_docs.py --check
                   $<TARGET_FILE:memest> ${PROJECT_SOURCE_DIR}/doc)
  set_tests_properties(docs.man_completions PROPERTIES LABELS docs TIMEOUT 120
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  add_test(NAME docs.options_agree
           COMMAND ${MEMEST_DOCS_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_options.py
                   $<TARGET_FILE:memest> ${PROJECT_SOURCE_DIR})
  add_test(NAME docs.options_agree_detects
           COMMAND ${MEMEST_DOCS_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_options.py --self-test
                   $<TARGET_FILE:memest> ${PROJECT_SOURCE_DIR})
  set_tests_properties(docs.options_agree docs.options_agree_detects PROPERTIES LABELS docs TIMEOUT 120
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()

find_program(MEMEST_GROFF NAMES groff)
if(MEMEST_GROFF)
  add_test(NAME docs.man_lint
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/install/man_lint.sh ${PROJECT_SOURCE_DIR}/doc/memest.1)
  set_tests_properties(docs.man_lint PROPERTIES LABELS docs TIMEOUT 60)
endif()

add_test(NAME install.prefix
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/install/prefix.sh ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR})
set_tests_properties(install.prefix PROPERTIES LABELS install TIMEOUT 300)

find_program(MEMEST_DPKG_DEB NAMES dpkg-deb)
if(CMAKE_CPACK_COMMAND AND MEMEST_DPKG_DEB)
  add_test(NAME install.deb
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/install/deb.sh ${CMAKE_CPACK_COMMAND} ${PROJECT_BINARY_DIR})
  set_tests_properties(install.deb PROPERTIES LABELS install TIMEOUT 600)
endif()
