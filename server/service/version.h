#pragma once

// The groved version, from the CMake project version.

namespace grove::service {

#ifdef GROVE_VERSION
inline constexpr const char* kVersion = GROVE_VERSION;
#else
inline constexpr const char* kVersion = "unknown";
#endif

}  // namespace grove::service
