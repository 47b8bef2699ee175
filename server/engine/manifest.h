#pragma once

// The manifest: everything a checkpoint needs besides its pages. One file per checkpoint,
// MANIFEST-<epoch, 20 digits>, written and synced before the superblock that names it (by size and
// crc) is flipped. Layout (docs/formats/manifest.md):
//
//   magic "GROVEMF2" | epoch u64 | redo_lsn u64
//   | varint-prefixed sections: allocator | epoch map list | variant | params | index metadata
//   | blob values varint | blob pages varint
//   | memory-only cells: count varint, then each varint-prefixed
//   | [flags varint]   (absent in manifests written before it existed: 0)
//   | [marks: count varint, then each: name, value (varint-prefixed), lsn varint]   (absent: none)
//   | masked crc32c u32 of everything before it
//
// Recovery frees the blobs of the memory-only cells (Index::ListMemoryOnlyCells), then replays
// the WAL from redo_lsn.

#include <cstdint>
#include <string>
#include <vector>

#include "grove/io_backend.h"
#include "grove/status.h"

namespace grove {

struct Manifest {
  uint64_t epoch = 0;
  uint64_t redo_lsn = 1;
  std::string allocator;  // ExtentAllocator::Serialize
  std::string epoch_map;  // EpochTable::Serialize
  std::string variant;
  std::string params;          // every resolved parameter, "k=v;k=v"
  std::string index_metadata;  // Index::SerializeMetadata
  uint64_t blob_values = 0;
  uint64_t blob_pages = 0;
  // Blob cells the index referenced only from memory: recovery frees them before replay.
  std::vector<std::string> memory_only_cells;
  // Engine-wide facts about the data. kMayHoldExpiring: values with an expiry may be present,
  // so the expiry sweep runs after a reopen (cleared by a sweep that found none).
  static constexpr uint64_t kMayHoldExpiring = 1;
  uint64_t flags = 0;
  // The database's marks (Db::GetMark) as of the checkpoint, each with the LSN of the record that
  // set it: replay changes a mark only with a record newer than that.
  struct Mark {
    std::string name;
    std::string value;
    uint64_t lsn = 0;
  };
  std::vector<Mark> marks;

  std::string Encode() const;
  static StatusOr<Manifest> Decode(Slice data);
};

std::string ManifestFileName(uint64_t epoch);  // "MANIFEST-00000000000000000042"
// Parses a manifest file name; false for other names.
bool ParseManifestFileName(const std::string& name, uint64_t* epoch);

// Writes the file, syncs it and its directory.
Status WriteManifestFile(IoBackend* io, const std::string& dir, uint64_t epoch, Slice encoded);
// Reads the file and checks it against the size and crc the superblock recorded.
StatusOr<std::string> ReadManifestFile(IoBackend* io, const std::string& dir, uint64_t epoch,
                                       uint64_t size, uint32_t masked_crc);

}  // namespace grove
