// libFuzzer target: recovery of a mutated tiny data directory (docs/reliability.md, "Fuzzing"),
// after SQLite's dbsqlfuzz, which mutates the database file and the statements together.
//
// A template directory is built once per process: a checkpointed B+-tree with inline and
// out-of-line values, then writes that only the WAL holds (the process "died"). Each input is a
// list of edits to the template's files (overwrite, xor, zero or truncate at an offset), applied
// to a fresh copy; then the directory is opened, read completely, verified, written to,
// checkpointed, closed and opened again.
//
// Checks, beyond "no crash, no UB, no leak": opening either succeeds or fails with a message; a
// read returns an intact value that was once written for that key (values are tagged,
// reliability/tagged_value.h), "absent", or DATA_LOSS, and nothing else.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "grove/db.h"

#include "io/fault_backend.h"
#include "reliability/tagged_value.h"
#include "util/coding.h"

namespace {

namespace fs = std::filesystem;
using grove::Status;
using grove::StatusCode;

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

constexpr uint64_t kKeys = 120;

std::string FuzzKey(uint64_t i) { return grove::EncodeU64Key(i * 7); }

grove::Options FuzzOptions(const std::string& dir) {
  grove::Options o;
  o.data_dir = dir;
  o.cache_bytes = 1 << 20;
  o.direct_io = false;
  o.io.kind = grove::IoBackendKind::kPsync;
  o.io.psync_threads = 0;
  o.wal.sync = grove::SyncMode::kNone;
  o.wal.segment_bytes = 1 << 20;
  o.wal.max_unsynced_bytes = 64 << 10;
  o.max_batch_bytes = 16 << 10;
  o.checkpoint.interval_seconds = 0;
  o.logger = grove::NewNullLogger();
  return o;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Template {
  std::string work;  // scratch directory, rewritten for every input
  std::vector<std::pair<std::string, std::string>> files;  // name, bytes
  std::map<std::string, std::set<uint64_t>> versions;      // key -> seqs ever written
};

Template* BuildTemplate() {
  auto* t = new Template();
  const char* base = std::getenv("TMPDIR");
  std::string root = std::string(base && *base ? base : "/tmp") + "/grove-fuzz-XXXXXX";
  Check(mkdtemp(root.data()) != nullptr);
  const std::string dir = root + "/template";
  t->work = root + "/work";
  uint64_t seq = 0;
  auto put = [&](grove::Db* db, uint64_t i, size_t len) {
    const std::string k = FuzzKey(i);
    Check(db->Put(k, grove::testing::MakeTaggedValue(k, 0, ++seq, len)).ok());
    t->versions[k].insert(seq);
  };
  {
    auto db = grove::Db::Open(FuzzOptions(dir));
    Check(db.ok());
    for (uint64_t i = 0; i < kKeys; ++i) put(db->get(), i, i % 10 == 0 ? 1500 : 100);
    Check((*db)->Close().ok());
  }
  // Logged only: the process dies with the page cache intact.
  auto inner =
      grove::NewIoBackend({.kind = grove::IoBackendKind::kPsync, .psync_threads = 0}, nullptr);
  auto fb = std::make_shared<grove::FaultInjectionBackend>(*inner, 1);
  {
    grove::Options o = FuzzOptions(dir);
    o.io_backend = fb;
    auto db = grove::Db::Open(o);
    Check(db.ok());
    for (uint64_t i = 0; i < kKeys; i += 3) put(db->get(), i, i % 9 == 0 ? 1300 : 60);
    Check((*db)->Delete(FuzzKey(5)).ok());
    fb->CrashAfter(0);
  }
  Check(fb->SimulatePowerLoss(grove::FaultInjectionBackend::PowerLoss::kKeepUnsynced).ok());
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename();
    if (name == "LOCK") continue;
    std::string bytes = ReadAll(e.path());
    if (name.rfind("wal-", 0) == 0) {
      while (!bytes.empty() && bytes.back() == '\0') bytes.pop_back();  // preallocated zeros
    }
    t->files.push_back({name, std::move(bytes)});
  }
  std::sort(t->files.begin(), t->files.end());
  fs::remove_all(dir);
  t->versions[FuzzKey(kKeys + 1)].insert(1);  // written by every input after recovery
  return t;
}

const Template& GetTemplate() {
  static const Template* t = BuildTemplate();
  return *t;
}

// A read result must be absent, DATA_LOSS, or a value once written for this key.
void CheckValue(const Template& t, const std::string& key, const std::string& value) {
  grove::testing::ValueTag tag;
  Check(grove::testing::CheckTaggedValue(key, value, &tag) == grove::testing::TagCheck::kOk);
  auto it = t.versions.find(key);
  Check(it != t.versions.end() && it->second.count(tag.seq) > 0);
}

void ReadEverything(const Template& t, grove::Db* db) {
  auto it = db->NewIterator(grove::ScanOptions());
  if (it.ok()) {
    for (int n = 0; (*it)->Valid() && n < 10000; (*it)->Next(), ++n) {
      CheckValue(t, std::string((*it)->key()), std::string((*it)->value()));
    }
    Check((*it)->status().ok() || (*it)->status().code() == StatusCode::kDataLoss);
  } else {
    Check(it.status().code() == StatusCode::kDataLoss);
  }
  std::string v;
  for (uint64_t i = 0; i < kKeys; ++i) {
    auto found = db->Get(FuzzKey(i), &v);
    if (!found.ok()) {
      Check(found.status().code() == StatusCode::kDataLoss);
    } else if (*found) {
      CheckValue(t, FuzzKey(i), v);
    }
  }
  grove::VerifyReport report;
  const Status s = db->Verify(&report);
  Check(s.ok() || s.code() == StatusCode::kDataLoss);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Template& t = GetTemplate();
  fs::remove_all(t.work);
  fs::create_directories(t.work);
  std::vector<std::string> files;
  for (const auto& [name, bytes] : t.files) files.push_back(bytes);

  // Edits: [file u8][offset u32][op u8][len u8][len bytes], at most 16 of them.
  size_t pos = 0;
  for (int edits = 0; edits < 16 && pos + 7 <= size; ++edits) {
    std::string& f = files[data[pos] % files.size()];
    const uint32_t raw = grove::DecodeFixed32(reinterpret_cast<const char*>(data + pos + 1));
    const uint8_t op = data[pos + 5];
    const size_t len = std::min<size_t>(data[pos + 6], size - pos - 7);
    const uint8_t* bytes = data + pos + 7;
    pos += 7 + len;
    if (f.empty()) continue;
    const size_t off = raw % f.size();
    switch (op % 4) {
      case 0:
        for (size_t i = 0; i < len && off + i < f.size(); ++i)
          f[off + i] = static_cast<char>(bytes[i]);
        break;
      case 1:
        for (size_t i = 0; i < len && off + i < f.size(); ++i)
          f[off + i] ^= static_cast<char>(bytes[i]);
        break;
      case 2:
        for (size_t i = 0; i < 16u * (len + 1) && off + i < f.size(); ++i) f[off + i] = '\0';
        break;
      default:
        f.resize(off);
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    std::ofstream(t.work + "/" + t.files[i].first, std::ios::binary) << files[i];
  }

  auto db = grove::Db::Open(FuzzOptions(t.work));
  if (!db.ok()) {
    Check(!db.status().message().empty());
    return 0;
  }
  ReadEverything(t, db->get());
  // Write on top of whatever recovery made of it, persist, and read it back.
  const std::string k = FuzzKey(kKeys + 1);
  (void)(*db)->Put(k, grove::testing::MakeTaggedValue(k, 0, 1, 80));
  (void)(*db)->Checkpoint();
  (void)(*db)->Close();
  db->reset();
  auto again = grove::Db::Open(FuzzOptions(t.work));
  if (again.ok()) {
    ReadEverything(t, again->get());
    (void)(*again)->Close();
  }
  return 0;
}
