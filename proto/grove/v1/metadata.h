#pragma once

// Metadata keys of the grove.v1 API that both the server and clients use (docs/server.md).

namespace grove::v1 {

// Trailing metadata on an UNAVAILABLE write refused before anything was applied (value "1"): a
// client may retry such a write. Any other failed write may have been applied.
inline constexpr char kNotAppliedMetadata[] = "grove-not-applied";

// Cluster mode (docs/cluster.md). A client that routes by a shard map sends the version it routes
// by; a node that has an older map reads the newest before it answers.
inline constexpr char kMapVersionMetadata[] = "grove-map-version";
// On OUT_OF_RANGE from a node that does not own a key (value "1"), beside kMapVersionMetadata
// with the node's map version: the client's map is stale; refresh it and retry.
inline constexpr char kNotOwnerMetadata[] = "grove-not-owner";
// Trailing metadata of a Scan that stopped at the end of the node's range before its own end or
// limit (binary: the key where the next range begins; a reverse scan: the range's start). A
// routing client continues there on the next range's owner.
inline constexpr char kScanStoppedAtMetadata[] = "grove-scan-stopped-at-bin";

}  // namespace grove::v1
