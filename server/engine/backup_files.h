#pragma once

// The files of a backup (Db::Backup, CheckBackup, RestoreBackup): a directory holding a copy of
// the data file as of one checkpoint, that checkpoint's manifest, the log segments from its redo
// point up to the backup point, and a BACKUP file that describes them (docs/formats/backup.md):
//
//   grove-backup 1
//   checkpoint_epoch <n>
//   redo_lsn <n>
//   last_lsn <n>
//   variant <name>
//   param <name>=<value>                                  one line per resolved parameter
//   created_unix_ms <n>
//   data_bytes <n>
//   wal_bytes <n>
//   pages_preserved <n>
//   seconds <x>
//   file <name> <bytes> <masked crc32c, 8 hex digits>      one line per file
//   end <masked crc32c of every byte above, 8 hex digits>
//
// The BACKUP file is written last (and synced, with the directory): a directory without one is
// an unfinished backup.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "grove/db.h"
#include "grove/io_backend.h"
#include "grove/status.h"

namespace grove::backup {

inline constexpr const char* kBackupFileName = "BACKUP";

struct FileEntry {
  std::string name;
  uint64_t bytes = 0;
  uint32_t masked_crc = 0;
};

struct Description {
  BackupInfo info;  // info.params: the parameters joined as "k=v;k=v", for display
  std::map<std::string, std::string> params;
  std::vector<FileEntry> files;
};

std::string Encode(const Description& d);
// kDataLoss naming the line when the text is not a valid BACKUP file.
StatusOr<Description> Decode(const std::string& text);

// Size and masked crc32c of a file's bytes.
StatusOr<FileEntry> Summarize(IoBackend* io, const std::string& dir, const std::string& name);

// Asked between chunks of a copy and during its pauses: true stops it (kAborted).
using StopFn = std::function<bool()>;

// Copies `bytes` bytes of `from` into `to` (created), leaving 4 KiB blocks of zeros as holes, at
// most `bytes_per_second` (0: unlimited), and syncs `to`. `stop` may be null.
Status CopyFile(IoBackend* io, const std::string& from, const std::string& to, uint64_t bytes,
                uint64_t bytes_per_second, const StopFn& stop);

// Creates `dir`, or accepts it when it exists and is empty; kFailedPrecondition naming `what`
// otherwise. `created` (may be null) says whether it created it.
Status PrepareEmptyDir(IoBackend* io, const std::string& dir, const char* what,
                       bool* created = nullptr);

// Paces a copy: after `done` bytes since `started_nanos`, sleeps until they fit the rate, in
// short naps so that `stop` (may be null) is asked often. False when `stop` said to stop.
bool Pace(uint64_t done, uint64_t started_nanos, uint64_t bytes_per_second, const StopFn& stop);

// The slowest pace a backup accepts: a slower one would hold the log (and a checkpoint's
// pages) for days.
inline constexpr uint64_t kMinBytesPerSecond = 1 << 20;

}  // namespace grove::backup
