# The C++ package: libtilelang_cpp (shared, versioned SONAME), the headers under
# <prefix>/include/tl, the device headers that generated kernels include under
# <prefix>/share/tilelang_cpp/device, a CMake config package (imported target
# tilelang_cpp::compiler) and a pkg-config file. See docs/cpp_api.md.
include(CMakePackageConfigHelpers)

add_library(tilelang_cpp SHARED $<TARGET_OBJECTS:tl_objects>)
add_library(tilelang_cpp::compiler ALIAS tilelang_cpp)
set_target_properties(tilelang_cpp PROPERTIES
  EXPORT_NAME compiler
  VERSION ${PROJECT_VERSION}
  # 0.x: a minor release may change the ABI, so the SONAME carries major.minor.
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
target_compile_features(tilelang_cpp INTERFACE cxx_std_20)
target_include_directories(tilelang_cpp PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
  $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  # The compiler's own headers that the public ones still include ("ir/ir.h" ...).
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/tl/detail>)
target_link_libraries(tilelang_cpp PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND NOT TL_SANITIZE)
  target_link_options(tilelang_cpp PRIVATE -Wl,--no-undefined)
endif()

set(tl_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tilelang_cpp)
install(TARGETS tilelang_cpp EXPORT tilelang_cppTargets COMPONENT cxx
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/tl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT cxx)
install(DIRECTORY src/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tl/detail COMPONENT cxx
  FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
foreach(header ${TL_HOST_TYPE_HEADERS})
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES device/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tl/detail/device/${folder} COMPONENT cxx)
endforeach()
install(DIRECTORY device/ DESTINATION ${CMAKE_INSTALL_DATADIR}/tilelang_cpp/device COMPONENT cxx)

install(EXPORT tilelang_cppTargets NAMESPACE tilelang_cpp:: DESTINATION ${tl_cmake_dir} COMPONENT cxx)
configure_package_config_file(cmake/tilelang_cppConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/tilelang_cppConfig.cmake INSTALL_DESTINATION ${tl_cmake_dir}
  PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/tilelang_cppConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/tilelang_cppConfig.cmake
  ${PROJECT_BINARY_DIR}/package/tilelang_cppConfigVersion.cmake DESTINATION ${tl_cmake_dir} COMPONENT cxx)

# pkg-config: paths relative to the .pc file, so the prefix stays relocatable.
file(RELATIVE_PATH tl_pc_to_prefix ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" tl_pc_to_prefix "${tl_pc_to_prefix}")
configure_file(cmake/tilelang_cpp.pc.in ${PROJECT_BINARY_DIR}/package/tilelang_cpp.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/tilelang_cpp.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT cxx)
