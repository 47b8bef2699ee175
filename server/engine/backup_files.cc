#include "engine/backup_files.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "util/clock.h"
#include "util/crc32c.h"

namespace grove::backup {
namespace {

constexpr size_t kBlock = 4096;
constexpr size_t kChunk = 1 << 20;

bool AllZero(const char* p, size_t n) {
  return std::all_of(p, p + n, [](char c) { return c == 0; });
}

std::string Hex32(uint32_t v) { return fmt::format("{:08x}", v); }

}  // namespace

std::string Encode(const Description& d) {
  const BackupInfo& i = d.info;
  std::string s = "grove-backup 1\n";
  s += fmt::format("checkpoint_epoch {}\nredo_lsn {}\nlast_lsn {}\n", i.checkpoint_epoch,
                   i.redo_lsn, i.last_lsn);
  s += fmt::format("variant {}\n", i.variant);
  for (const auto& [k, v] : d.params) s += fmt::format("param {}={}\n", k, v);
  s += fmt::format("created_unix_ms {}\ndata_bytes {}\nwal_bytes {}\npages_preserved {}\n",
                   i.created_unix_ms, i.data_bytes, i.wal_bytes, i.pages_preserved);
  s += fmt::format("seconds {:.3f}\n", i.seconds);
  for (const FileEntry& f : d.files) {
    s += fmt::format("file {} {} {}\n", f.name, f.bytes, Hex32(f.masked_crc));
  }
  s += "end " + Hex32(crc32c::Mask(crc32c::Value(s.data(), s.size()))) + "\n";
  return s;
}

StatusOr<Description> Decode(const std::string& text) {
  const size_t end = text.rfind("end ");
  if (end == std::string::npos || (end > 0 && text[end - 1] != '\n')) {
    return Status::DataLoss("BACKUP: no 'end' line (the file is cut short)");
  }
  const std::string want = Hex32(crc32c::Mask(crc32c::Value(text.data(), end)));
  if (text.substr(end + 4, 8) != want || text.size() != end + 13) {
    return Status::DataLoss("BACKUP: checksum mismatch on its 'end' line");
  }
  Description d;
  BackupInfo& i = d.info;
  std::istringstream in(text.substr(0, end));
  std::string line;
  int n = 0;
  auto bad = [&](const std::string& why) {
    return Status::DataLoss(fmt::format("BACKUP line {}: {}", n, why));
  };
  while (std::getline(in, line)) {
    ++n;
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    auto num = [&](uint64_t* out) {
      char* e = nullptr;
      *out = std::strtoull(rest.c_str(), &e, 10);
      return !rest.empty() && e != nullptr && *e == '\0';
    };
    bool ok = true;
    if (n == 1) {
      ok = line == "grove-backup 1";
      if (!ok) return bad("not a Grove backup of format 1: '" + line + "'");
    } else if (key == "checkpoint_epoch") {
      ok = num(&i.checkpoint_epoch);
    } else if (key == "redo_lsn") {
      ok = num(&i.redo_lsn);
    } else if (key == "last_lsn") {
      ok = num(&i.last_lsn);
    } else if (key == "variant") {
      i.variant = rest;
      ok = !rest.empty();
    } else if (key == "param") {
      const size_t eq = rest.find('=');
      ok = eq != std::string::npos && eq > 0;
      if (ok) {
        d.params[rest.substr(0, eq)] = rest.substr(eq + 1);
        i.params += (i.params.empty() ? "" : ";") + rest;
      }
    } else if (key == "created_unix_ms") {
      ok = num(&i.created_unix_ms);
    } else if (key == "data_bytes") {
      ok = num(&i.data_bytes);
    } else if (key == "wal_bytes") {
      ok = num(&i.wal_bytes);
    } else if (key == "pages_preserved") {
      ok = num(&i.pages_preserved);
    } else if (key == "seconds") {
      i.seconds = std::strtod(rest.c_str(), nullptr);
    } else if (key == "file") {
      FileEntry f;
      std::istringstream fields(rest);
      std::string crc;
      ok = static_cast<bool>(fields >> f.name >> f.bytes >> crc) && crc.size() == 8 &&
           f.name.find('/') == std::string::npos && f.name != kBackupFileName;
      if (ok) f.masked_crc = static_cast<uint32_t>(std::strtoul(crc.c_str(), nullptr, 16));
      d.files.push_back(std::move(f));
    } else {
      return bad("unknown field '" + key + "'");
    }
    if (!ok) return bad("malformed: '" + line + "'");
  }
  if (i.checkpoint_epoch == 0 || i.variant.empty() || d.files.empty()) {
    return Status::DataLoss("BACKUP: checkpoint_epoch, variant or the file list is missing");
  }
  return d;
}

StatusOr<FileEntry> Summarize(IoBackend* io, const std::string& dir, const std::string& name) {
  GROVE_ASSIGN_OR_RETURN(auto file, io->OpenFile(dir + "/" + name, FileOptions{}));
  FileEntry f;
  f.name = name;
  GROVE_ASSIGN_OR_RETURN(f.bytes, file->Size());
  AlignedBuffer buf(kChunk);
  uint32_t crc = 0;
  for (uint64_t off = 0; off < f.bytes;) {
    size_t got = 0;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, f.bytes - off));
    GROVE_RETURN_IF_ERROR(file->Read(off, want, buf.data(), &got));
    if (got != want) return Status::DataLoss(fmt::format("{}: shorter than it was", name));
    crc = crc32c::Extend(crc, buf.data(), got);
    off += got;
  }
  f.masked_crc = crc32c::Mask(crc);
  return f;
}

bool Pace(uint64_t done, uint64_t started_nanos, uint64_t bytes_per_second, const StopFn& stop) {
  for (;;) {
    if (stop && stop()) return false;
    if (bytes_per_second == 0) return true;
    const double due = static_cast<double>(done) / static_cast<double>(bytes_per_second);
    const double spent = static_cast<double>(NowNanos() - started_nanos) * 1e-9;
    if (due <= spent) return true;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(due - spent, 0.05)));
  }
}

Status CopyFile(IoBackend* io, const std::string& from, const std::string& to, uint64_t bytes,
                uint64_t bytes_per_second, const StopFn& stop) {
  GROVE_ASSIGN_OR_RETURN(auto in, io->OpenFile(from, FileOptions{}));
  FileOptions create;
  create.create = true;
  GROVE_ASSIGN_OR_RETURN(auto out, io->OpenFile(to, create));
  GROVE_RETURN_IF_ERROR(out->Truncate(0));
  AlignedBuffer buf(kChunk);
  const uint64_t started = NowNanos();
  for (uint64_t off = 0; off < bytes;) {
    size_t got = 0;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, bytes - off));
    GROVE_RETURN_IF_ERROR(in->Read(off, want, buf.data(), &got));
    if (got != want) {
      return Status::DataLoss(
          fmt::format("{}: {} bytes, expected at least {}", from, off + got, bytes));
    }
    for (size_t b = 0; b < got; b += kBlock) {
      const size_t n = std::min(kBlock, got - b);
      if (!AllZero(buf.data() + b, n)) {
        GROVE_RETURN_IF_ERROR(out->Write(off + b, Slice(buf.data() + b, n)));
      }
    }
    off += got;
    if (!Pace(off, started, bytes_per_second, stop)) {
      return Status::Aborted(fmt::format("copying {}: stopped", from));
    }
  }
  GROVE_RETURN_IF_ERROR(out->Truncate(bytes));  // the size, holes included
  return out->Sync();
}

Status PrepareEmptyDir(IoBackend* io, const std::string& dir, const char* what, bool* created) {
  if (dir.empty()) return Status::InvalidArgument(fmt::format("{}: empty path", what));
  const bool existed = io->FileExists(dir);
  GROVE_RETURN_IF_ERROR(io->CreateDir(dir).WithContext(what));
  if (created != nullptr) *created = !existed;
  GROVE_ASSIGN_OR_RETURN(std::vector<std::string> names, io->ListDir(dir));
  std::erase_if(names, [](const std::string& n) { return n == "." || n == ".."; });
  if (!names.empty()) {
    return Status::FailedPrecondition(
        fmt::format("{}: '{}' is not empty ({} entries, e.g. '{}'); give a new directory", what,
                    dir, names.size(), names.front()));
  }
  return Status::Ok();
}

}  // namespace grove::backup
