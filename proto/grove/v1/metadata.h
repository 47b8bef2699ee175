#pragma once

// Metadata keys of the grove.v1 API that both the server and clients use (docs/server.md).

namespace grove::v1 {

// Trailing metadata on an UNAVAILABLE write refused before anything was applied (value "1"): a
// client may retry such a write. Any other failed write may have been applied.
inline constexpr char kNotAppliedMetadata[] = "grove-not-applied";

}  // namespace grove::v1
