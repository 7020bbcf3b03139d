# magpie_warnings(target): the warning set every Magpie target compiles with.
function(magpie_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                                           -Wnon-virtual-dtor -Wno-missing-field-initializers)
  # GCC 12 reports std::string assignments as overlapping memcpy (GCC bug 105651).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(MAGPIE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
