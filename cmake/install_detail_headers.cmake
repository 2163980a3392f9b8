# Run by `cmake --install` (cmake/install_package.cmake): installs the public headers
# (include/tl/*.h) into <includedir>/tl and, into <includedir>/tl/detail, the compiler's
# own headers that they include, directly or through one another, and no others, so the
# rest of src/ (passes, code generators, caches ...) stays private. The set is found at
# install time from the sources' `#include "..."` lines (every include in src/ names its
# file from src/). In the installed copies such an include names the file under
# tl/detail ("ir/ir.h" becomes "tl/detail/ir/ir.h"), so <includedir> is the one folder a
# program puts on its include path. TL_SOURCE_DIR, TL_STAGE_DIR (a folder of the build
# tree for the rewritten copies) and TL_INCLUDE_DIR (relative to the prefix) come from
# the caller.
cmake_policy(VERSION 3.22)
file(GLOB public RELATIVE "${TL_SOURCE_DIR}/include" "${TL_SOURCE_DIR}/include/tl/*.h")
set(pending "")
foreach(header IN LISTS public)
  list(APPEND pending "${TL_SOURCE_DIR}/include/${header}")
endforeach()
set(headers "")
while(pending)
  list(POP_FRONT pending file)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" header "${line}")
    if(EXISTS "${TL_SOURCE_DIR}/src/${header}" AND NOT header IN_LIST headers)
      list(APPEND headers "${header}")
      list(APPEND pending "${TL_SOURCE_DIR}/src/${header}")
    endif()
  endforeach()
endwhile()
list(SORT headers)
if(IS_ABSOLUTE "${CMAKE_INSTALL_PREFIX}")
  set(destination "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${TL_INCLUDE_DIR}")
else()
  set(destination "${CMAKE_INSTALL_PREFIX}/${TL_INCLUDE_DIR}")
endif()

# `source` (a path) rewritten into TL_STAGE_DIR/`name`, then installed as <includedir>/`name`.
function(tl_install_header source name)
  file(READ "${source}" text)
  foreach(header IN LISTS headers)
    string(REPLACE "#include \"${header}\"" "#include \"tl/detail/${header}\"" text "${text}")
  endforeach()
  # An include of a src/ header written another way would reach past the package.
  string(REGEX MATCHALL "#[ \t]*include[ \t]*\"[^\"]+\"" includes "${text}")
  foreach(include IN LISTS includes)
    string(REGEX REPLACE ".*\"([^\"]+)\"" "\\1" included "${include}")
    if(EXISTS "${TL_SOURCE_DIR}/src/${included}" AND NOT included MATCHES "^tl/")
      message(FATAL_ERROR "${source}: '${include}' names a header of src/ that is not installed under tl/detail; "
                          "write it as #include \"${included}\"")
    endif()
  endforeach()
  set(staged "${TL_STAGE_DIR}/${name}")
  get_filename_component(folder "${name}" DIRECTORY)
  if(EXISTS "${staged}")
    file(READ "${staged}" old)
  else()
    set(old "")
  endif()
  if(NOT old STREQUAL text)  # unchanged copies keep their time stamps
    file(WRITE "${staged}" "${text}")
  endif()
  file(INSTALL "${staged}" DESTINATION "${destination}/${folder}")
endfunction()

foreach(header IN LISTS public)
  tl_install_header("${TL_SOURCE_DIR}/include/${header}" "${header}")
endforeach()
foreach(header IN LISTS headers)
  tl_install_header("${TL_SOURCE_DIR}/src/${header}" "tl/detail/${header}")
endforeach()
