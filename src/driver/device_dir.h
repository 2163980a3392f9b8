// Resolution of the device header directory (the public half is include/tl/device_dir.h)
// and the digest of its contents that joins every cache key.
#pragma once

#include <string>

#include "tl/device_dir.h"

namespace tl {

// Concatenated contents of every header under the device dir (cache key part).
const std::string& device_headers_digest_input();

}  // namespace tl
