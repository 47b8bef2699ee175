#pragma once

// The superblock: pages 0 and 1 of the data file, written alternately (epoch E goes to slot E % 2).
// Flipping it is the commit point of a checkpoint. Layout (docs/formats/superblock.md):
//
//   0    24        32       36        40       48              56           60
//   +----+---------+--------+---------+--------+---------------+------------+--------+
//   |hdr | magic   | format | page    | epoch  | manifest size | manifest   | unused |
//   |    | 8 bytes | u32    | size u32| u64    | u64           | crc u32    | u32    |
//   +----+---------+--------+---------+--------+---------------+------------+--------+
//   64               72        74          74+n      76+n
//   | created (unix s) | n u16 | variant   | m u16   | layout parameters "k=v;k=v"  |
//
//   hdr: the common page header (type kSuperblock, own id 0 or 1, crc over the page).
//   epoch 0 marks a database being created: no checkpoint exists yet.

#include <cstdint>
#include <optional>
#include <string>

#include "grove/io_backend.h"
#include "grove/status.h"

namespace grove {

// 2: one inner-node format for every tree variant (index/core), manifests with memory-only cells.
inline constexpr uint32_t kDataFormatVersion = 2;

struct Superblock {
  uint64_t epoch = 0;
  uint64_t manifest_size = 0;
  uint32_t manifest_crc = 0;  // masked crc32c of the manifest file
  uint64_t created_unix = 0;
  std::string variant;
  std::string layout;  // the variant's layout parameters, canonical
  uint32_t format = kDataFormatVersion;
};

// Writes `sb` into its slot (epoch % 2) of `file` (O_DIRECT) and syncs the file.
Status WriteSuperblock(File* file, const Superblock& sb);

// Reads both slots and returns the valid one with the higher epoch; nullopt when neither is valid.
// `problems` collects why a slot was rejected (for the error message when both are).
StatusOr<std::optional<Superblock>> ReadSuperblock(File* file, std::string* problems);

}  // namespace grove
