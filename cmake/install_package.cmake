# The C++ package: the runtime library libtilelang_cpp_runtime (load and launch
# compiled kernels, no compiler inside) and the compiler library libtilelang_cpp
# (builder, passes, codegen, compile; it links the runtime), each shared with a
# versioned SONAME and static; the headers under <prefix>/include/tl, the device
# headers that generated kernels include under <prefix>/share/tilelang_cpp/device,
# a CMake config package (tilelang_cpp::compiler, tilelang_cpp::runtime and their
# _static twins) and pkg-config files. See docs/cpp_api.md.
#
# Inside a wheel (SKBUILD) the package is the shared libraries alone, each one file
# named by its SONAME: a wheel holds no symlinks (each would be a second copy), and
# the static archives would double its size. Its config package then has no _static
# targets and no pkg-config files (they link through the library's unversioned name).
include(CMakePackageConfigHelpers)

# <name> (shared) and <name>_static (static, the same file name), both exported as
# tilelang_cpp::<export> and tilelang_cpp::<export>_static.
function(tl_package_library name export objects)
  add_library(${name} SHARED $<TARGET_OBJECTS:${objects}>)
  add_library(tilelang_cpp::${export} ALIAS ${name})
  # 0.x: a minor release may change the ABI, so the SONAME carries major.minor.
  set(soversion ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  if(DEFINED SKBUILD)
    set_target_properties(${name} PROPERTIES EXPORT_NAME ${export} VERSION ${soversion} SOVERSION ${soversion})
    set(libs ${name})
  else()
    set_target_properties(${name} PROPERTIES EXPORT_NAME ${export} VERSION ${PROJECT_VERSION} SOVERSION ${soversion})
    add_library(${name}_static STATIC $<TARGET_OBJECTS:${objects}>)
    add_library(tilelang_cpp::${export}_static ALIAS ${name}_static)
    set_target_properties(${name}_static PROPERTIES EXPORT_NAME ${export}_static OUTPUT_NAME ${name})
    target_link_libraries(${name}_static PUBLIC Threads::Threads ${CMAKE_DL_LIBS})
    set(libs ${name} ${name}_static)
  endif()
  foreach(lib ${libs})
    target_compile_features(${lib} INTERFACE cxx_std_20)
    target_include_directories(${lib} PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
      $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  endforeach()
  target_link_libraries(${name} PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  # Every symbol resolved at link time: for the runtime library this is the check
  # that it needs nothing of the compiler.
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND NOT TL_SANITIZE)
    target_link_options(${name} PRIVATE -Wl,--no-undefined)
  endif()
endfunction()

tl_package_library(tilelang_cpp_runtime runtime tl_runtime_objects)
tl_package_library(tilelang_cpp compiler tl_compiler_objects)
target_link_libraries(tilelang_cpp PUBLIC tilelang_cpp_runtime)
set(tl_package_libraries tilelang_cpp_runtime tilelang_cpp)
if(TARGET tilelang_cpp_static)
  target_link_libraries(tilelang_cpp_static PUBLIC tilelang_cpp_runtime_static)
  list(APPEND tl_package_libraries tilelang_cpp_runtime_static tilelang_cpp_static)
endif()

set(tl_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tilelang_cpp)
if(DEFINED SKBUILD)
  set(tl_namelink NAMELINK_SKIP)
endif()
install(TARGETS ${tl_package_libraries} EXPORT tilelang_cppTargets COMPONENT cxx
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ${tl_namelink}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The public headers and, of src/, only the headers they include, which the installed
# copies name as tl/detail/... (cmake/install_detail_headers.cmake).
install(CODE "set(TL_SOURCE_DIR [[${PROJECT_SOURCE_DIR}]])
set(TL_STAGE_DIR [[${PROJECT_BINARY_DIR}/package/include]])
set(TL_INCLUDE_DIR [[${CMAKE_INSTALL_INCLUDEDIR}]])" COMPONENT cxx)
install(SCRIPT cmake/install_detail_headers.cmake COMPONENT cxx)
foreach(header ${TL_HOST_TYPE_HEADERS})
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES device/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tl/detail/device/${folder} COMPONENT cxx)
endforeach()
install(DIRECTORY device/ DESTINATION ${TL_PACKAGE_DEVICE_DIR} COMPONENT cxx)

install(EXPORT tilelang_cppTargets NAMESPACE tilelang_cpp:: DESTINATION ${tl_cmake_dir} COMPONENT cxx)
configure_package_config_file(cmake/tilelang_cppConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/tilelang_cppConfig.cmake INSTALL_DESTINATION ${tl_cmake_dir}
  PATH_VARS TL_PACKAGE_DEVICE_DIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/tilelang_cppConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/tilelang_cppConfig.cmake
  ${PROJECT_BINARY_DIR}/package/tilelang_cppConfigVersion.cmake DESTINATION ${tl_cmake_dir} COMPONENT cxx)

if(NOT DEFINED SKBUILD)
  # pkg-config: paths relative to the .pc file, so the prefix stays relocatable.
  file(RELATIVE_PATH tl_pc_to_prefix ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
  string(REGEX REPLACE "/$" "" tl_pc_to_prefix "${tl_pc_to_prefix}")
  configure_file(cmake/tilelang_cpp.pc.in ${PROJECT_BINARY_DIR}/package/tilelang_cpp.pc @ONLY)
  configure_file(cmake/tilelang_cpp_runtime.pc.in ${PROJECT_BINARY_DIR}/package/tilelang_cpp_runtime.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/package/tilelang_cpp.pc ${PROJECT_BINARY_DIR}/package/tilelang_cpp_runtime.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT cxx)
endif()
