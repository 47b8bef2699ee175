#include "engine/manifest.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "util/coding.h"
#include "util/crc32c.h"

namespace grove {
namespace {

constexpr char kMagic[8] = {'G', 'R', 'O', 'V', 'E', 'M', 'F', '2'};

}  // namespace

std::string Manifest::Encode() const {
  std::string s(kMagic, 8);
  PutFixed64(&s, epoch);
  PutFixed64(&s, redo_lsn);
  PutLengthPrefixed(&s, allocator);
  PutLengthPrefixed(&s, epoch_map);
  PutLengthPrefixed(&s, variant);
  PutLengthPrefixed(&s, params);
  PutLengthPrefixed(&s, index_metadata);
  PutVarint64(&s, blob_values);
  PutVarint64(&s, blob_pages);
  PutVarint64(&s, memory_only_cells.size());
  for (const std::string& c : memory_only_cells) PutLengthPrefixed(&s, c);
  PutVarint64(&s, flags);
  if (!marks.empty()) {
    PutVarint64(&s, marks.size());
    for (const Mark& mark : marks) {
      PutLengthPrefixed(&s, mark.name);
      PutLengthPrefixed(&s, mark.value);
      PutVarint64(&s, mark.lsn);
    }
  }
  PutFixed32(&s, crc32c::Mask(crc32c::Value(s.data(), s.size())));
  return s;
}

StatusOr<Manifest> Manifest::Decode(Slice data) {
  if (data.size() < 8 + 16 + 4 || std::memcmp(data.data(), kMagic, 8) != 0) {
    return Status::DataLoss("manifest: bad magic or too short");
  }
  const uint32_t stored = DecodeFixed32(data.data() + data.size() - 4);
  if (crc32c::Unmask(stored) != crc32c::Value(data.data(), data.size() - 4)) {
    return Status::DataLoss("manifest: checksum mismatch");
  }
  Slice in = data.substr(8, data.size() - 12);
  Manifest m;
  Slice a, e, v, p, im;
  if (!GetFixed64(&in, &m.epoch) || !GetFixed64(&in, &m.redo_lsn) || !GetLengthPrefixed(&in, &a) ||
      !GetLengthPrefixed(&in, &e) || !GetLengthPrefixed(&in, &v) || !GetLengthPrefixed(&in, &p) ||
      !GetLengthPrefixed(&in, &im) || !GetVarint64(&in, &m.blob_values) ||
      !GetVarint64(&in, &m.blob_pages)) {
    return Status::DataLoss("manifest: malformed sections");
  }
  uint64_t cells;
  if (!GetVarint64(&in, &cells) || cells > in.size()) {
    return Status::DataLoss("manifest: malformed list of memory-only cells");
  }
  for (uint64_t i = 0; i < cells; ++i) {
    Slice c;
    if (!GetLengthPrefixed(&in, &c))
      return Status::DataLoss("manifest: truncated memory-only cell");
    m.memory_only_cells.emplace_back(c);
  }
  if (!in.empty() && !GetVarint64(&in, &m.flags)) {
    return Status::DataLoss("manifest: malformed flags");
  }
  uint64_t marks = 0;
  if (!in.empty() && (!GetVarint64(&in, &marks) || marks > in.size())) {
    return Status::DataLoss("manifest: malformed list of marks");
  }
  for (uint64_t i = 0; i < marks; ++i) {
    Slice name, value;
    Mark mark;
    if (!GetLengthPrefixed(&in, &name) || !GetLengthPrefixed(&in, &value) ||
        !GetVarint64(&in, &mark.lsn)) {
      return Status::DataLoss("manifest: truncated mark");
    }
    mark.name.assign(name);
    mark.value.assign(value);
    m.marks.push_back(std::move(mark));
  }
  if (!in.empty()) return Status::DataLoss("manifest: trailing bytes after its sections");
  m.allocator.assign(a);
  m.epoch_map.assign(e);
  m.variant.assign(v);
  m.params.assign(p);
  m.index_metadata.assign(im);
  return m;
}

std::string ManifestFileName(uint64_t epoch) { return fmt::format("MANIFEST-{:020}", epoch); }

bool ParseManifestFileName(const std::string& name, uint64_t* epoch) {
  constexpr std::string_view kPrefix = "MANIFEST-";
  if (name.size() != kPrefix.size() + 20 || name.compare(0, kPrefix.size(), kPrefix) != 0) {
    return false;
  }
  uint64_t v = 0;
  for (size_t i = kPrefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    v = v * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  *epoch = v;
  return true;
}

Status WriteManifestFile(IoBackend* io, const std::string& dir, uint64_t epoch, Slice encoded) {
  const std::string path = dir + "/" + ManifestFileName(epoch);
  GROVE_ASSIGN_OR_RETURN(auto file, io->OpenFile(path, FileOptions{.create = true}));
  GROVE_RETURN_IF_ERROR(file->Truncate(0));
  GROVE_RETURN_IF_ERROR(file->Write(0, encoded));
  GROVE_RETURN_IF_ERROR(file->Sync());
  return io->SyncDir(dir);
}

StatusOr<std::string> ReadManifestFile(IoBackend* io, const std::string& dir, uint64_t epoch,
                                       uint64_t size, uint32_t masked_crc) {
  const std::string path = dir + "/" + ManifestFileName(epoch);
  auto file = io->OpenFile(path, FileOptions{.read_only = true});
  if (!file.ok()) {
    return Status::DataLoss(fmt::format("{} named by the superblock cannot be opened: {}", path,
                                        file.status().ToString()));
  }
  std::string data(size, '\0');
  size_t got = 0;
  GROVE_RETURN_IF_ERROR((*file)->Read(0, size, data.data(), &got));
  if (got != size || crc32c::Mask(crc32c::Value(data.data(), data.size())) != masked_crc) {
    return Status::DataLoss(fmt::format("{}: does not match the superblock's size/checksum", path));
  }
  return data;
}

}  // namespace grove
