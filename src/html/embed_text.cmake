# cmake -DINPUT=file -DOUTPUT=file.cpp -P embed_text.cmake
# Writes a C++ source defining magpie::html::chart_js_source() as the file's
# text, in raw-string pieces (a delimiter the text cannot contain is checked).
file(READ ${INPUT} text)
string(FIND "${text}" ")mgp\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )mgp\"")
endif()
string(FIND "${text}" "</script" script_end)
if(NOT script_end EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains </script and cannot be inlined in a <script> element")
endif()
# Pieces of 8000 characters keep every literal far below compilers' limits.
string(LENGTH "${text}" n)
set(body "")
set(i 0)
while(i LESS n)
  string(SUBSTRING "${text}" ${i} 8000 piece)
  string(APPEND body "    R\"mgp(${piece})mgp\"\n")
  math(EXPR i "${i} + 8000")
endwhile()
get_filename_component(name ${INPUT} NAME)
file(WRITE ${OUTPUT}.tmp
"// Generated at build time from ${INPUT} by src/html/embed_text.cmake.
#include <string_view>

namespace magpie::html {

std::string_view chart_js_source() {
  static constexpr char text[] =
${body}    ;
  return {text, sizeof(text) - 1};
}

std::string_view chart_js_file_name() { return \"${name}\"; }

}  // namespace magpie::html
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
