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
// A range move's copy (docs/cluster.md, "Moving a range"): writes to the node receiving a range
// carry the move's id; the node accepts them for that range only, while the move is under way.
inline constexpr char kMoveIngestMetadata[] = "grove-move-ingest";
// A DeleteRange with this (value "1") drops keys of ranges this node neither owns nor receives:
// what a previous owner still holds after a move, or a receiver after an aborted one.
inline constexpr char kDropForeignMetadata[] = "grove-drop-foreign";
// On OUT_OF_RANGE from a replica of a replicated range that does not lead its Raft group (value
// "1"; nothing was applied), with kLeaderMetadata naming the node that leads it: resend there.
inline constexpr char kNotLeaderMetadata[] = "grove-not-leader";
inline constexpr char kLeaderMetadata[] = "grove-leader";
// A read that may be served by any replica of a replicated range (value: the most milliseconds
// of staleness the client accepts; docs/cluster.md, "Stale reads"). A replica that heard from
// its group within that long, and applied all it knows committed, reads its own engine and says
// the bound in kStalenessMetadata; otherwise the read is served as a linearizable one.
inline constexpr char kMaxStalenessMetadata[] = "grove-max-staleness-ms";
inline constexpr char kStalenessMetadata[] = "grove-staleness-ms";

}  // namespace grove::v1
