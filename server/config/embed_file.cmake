# cmake -DINPUT=<file> -DOUTPUT=<file.cc> -DNAMESPACE=<ns> -DFUNCTION=<name> -P embed_file.cmake
# Writes a .cc defining `std::string_view <ns>::<name>()` that returns the bytes of INPUT. A byte
# array (not a raw string literal) so that no content of the file can end the literal early.
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUTPUT}.tmp
"// Generated from ${INPUT} at build time; do not edit.\n"
"#include <string_view>\n\n"
"namespace ${NAMESPACE} {\n"
"namespace {\n"
"constexpr char kBytes[] = {\n${bytes}0x00};\n"
"}  // namespace\n\n"
"std::string_view ${FUNCTION}() { return std::string_view(kBytes, ${size}); }\n\n"
"}  // namespace ${NAMESPACE}\n")
# Only touch OUTPUT when it changed, so that an unchanged file does not recompile.
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
