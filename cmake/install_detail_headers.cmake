# Run by `cmake --install` (cmake/install_package.cmake): installs into
# <includedir>/tl/detail the compiler's own headers that the public headers
# (include/tl/*.h) include, directly or through one another, and no others, so the
# rest of src/ (passes, code generators, caches ...) stays private. The set is found
# at install time from the sources' `#include "..."` lines (every include in src/ names
# its file from src/). TL_SOURCE_DIR and TL_DETAIL_DIR (relative to the prefix) come
# from the caller.
cmake_policy(VERSION 3.22)
file(GLOB pending "${TL_SOURCE_DIR}/include/tl/*.h")
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
  set(destination "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${TL_DETAIL_DIR}")
else()
  set(destination "${CMAKE_INSTALL_PREFIX}/${TL_DETAIL_DIR}")
endif()
foreach(header IN LISTS headers)
  get_filename_component(folder "${header}" DIRECTORY)
  file(INSTALL "${TL_SOURCE_DIR}/src/${header}" DESTINATION "${destination}/${folder}")
endforeach()
