# Run at every build (cmake -P, from src/gpu/CMakeLists.txt): writes the build
# commit and dirty flag into OUT from IN; configure_file leaves OUT untouched
# when nothing changed, so nothing recompiles.
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
configure_file(${IN} ${OUT} @ONLY)
