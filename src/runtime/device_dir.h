// Where the device headers (device/cpu, device/cuda ...) are found at run time:
// TILELANG_DEVICE_DIR, else the directory the Python package registered, else
// the source tree this library was built from.
#pragma once

#include <string>

namespace tl {

const std::string& device_include_dir();
void set_device_include_dir(const std::string& dir);
// Concatenated contents of every header under the device dir (cache key part).
const std::string& device_headers_digest_input();

}  // namespace tl
