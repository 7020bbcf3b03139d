# Run at every build (cmake -P, from src/gpu/CMakeLists.txt): writes the build
# commit and dirty flag into OUT from IN; configure_file leaves OUT untouched
# when nothing changed, so nothing recompiles.
#
# Outside git (a wheel built from an sdist), ROOT/BUILD_COMMIT supplies them:
# the sdist step (the top CMakeLists.txt, SKBUILD_STATE "sdist") runs this
# script with COMMIT_FILE set, which writes that file instead of the header.
set(MAGPIE_BUILD_COMMIT "unknown")
set(MAGPIE_BUILD_DIRTY "false")
if(GIT)
  execute_process(COMMAND ${GIT} rev-parse HEAD WORKING_DIRECTORY ${ROOT}
                  OUTPUT_VARIABLE _commit OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0)
    set(MAGPIE_BUILD_COMMIT ${_commit})
    execute_process(COMMAND ${GIT} status --porcelain --untracked-files=no
                    WORKING_DIRECTORY ${ROOT} OUTPUT_VARIABLE _dirty ERROR_QUIET)
    if(NOT _dirty STREQUAL "")
      set(MAGPIE_BUILD_DIRTY "true")
    endif()
  endif()
endif()
if(MAGPIE_BUILD_COMMIT STREQUAL "unknown" AND EXISTS ${ROOT}/BUILD_COMMIT)
  # Line 1: the commit; line 2: "dirty" when the tree had uncommitted changes.
  file(STRINGS ${ROOT}/BUILD_COMMIT _lines LIMIT_COUNT 2)
  list(LENGTH _lines _n)
  if(_n GREATER 0)
    list(GET _lines 0 _first)
    if(_first MATCHES "^[0-9a-f]+$")
      set(MAGPIE_BUILD_COMMIT ${_first})
      if(_n GREATER 1)
        list(GET _lines 1 _second)
        if(_second STREQUAL "dirty")
          set(MAGPIE_BUILD_DIRTY "true")
        endif()
      endif()
    endif()
  endif()
endif()
if(DEFINED COMMIT_FILE)
  if(MAGPIE_BUILD_DIRTY)
    file(WRITE ${COMMIT_FILE} "${MAGPIE_BUILD_COMMIT}\ndirty\n")
  else()
    file(WRITE ${COMMIT_FILE} "${MAGPIE_BUILD_COMMIT}\n")
  endif()
  return()
endif()
configure_file(${IN} ${OUT} @ONLY)
