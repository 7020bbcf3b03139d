# magpie_warnings(target): the warning set every Magpie target compiles with.
function(magpie_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                                           -Wnon-virtual-dtor -Wno-missing-field-initializers)
  if(MAGPIE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
