// Writes the fuzzers' seed corpus (tests/fuzz/corpus/<target>/) from a real database, so that
// fuzzing starts from valid pages, segments and requests. Run by `scripts/fuzz.sh --seeds`;
// the output is committed.
//
//   fuzz_make_seeds <corpus dir>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "grove/db.h"
#include "grove/v1/kv.pb.h"

#include "page/page.h"
#include "reliability/tagged_value.h"
#include "util/coding.h"

namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const fs::path out(argv[1]);
  const fs::path dir = fs::temp_directory_path() / "grove-fuzz-seeds";
  fs::remove_all(dir);
  grove::Options o;
  o.data_dir = dir;
  o.cache_bytes = 1 << 20;
  o.direct_io = false;
  o.io.kind = grove::IoBackendKind::kPsync;
  o.wal.sync = grove::SyncMode::kNone;
  // Small segments keep the WAL seeds small; the engine wants a segment to hold the unsynced
  // window, and that window twice the largest batch.
  o.wal.segment_bytes = 1 << 20;
  o.wal.max_unsynced_bytes = 512 << 10;
  o.max_batch_bytes = 256 << 10;
  o.logger = grove::NewNullLogger();
  {
    auto db = grove::Db::Open(o);
    if (!db.ok()) {
      std::fprintf(stderr, "cannot open %s: %s\n", dir.c_str(), db.status().ToString().c_str());
      return 1;
    }
    for (uint64_t i = 0; i < 600; ++i) {
      const std::string k = grove::EncodeU64Key(i);
      (void)(*db)->Put(k, grove::testing::MakeTaggedValue(k, 0, i, i % 50 == 0 ? 2000 : 40));
    }
    (void)(*db)->Close();
  }
  {
    auto db = grove::Db::Open(o);
    grove::WriteBatch b;
    b.Put("a", "1");
    b.Delete("b");
    (void)(*db)->Write(b);
    (void)(*db)->Put("c", std::string(3000, 'c'));
    // Leave the WAL unclosed: copy the segment while the Db is open.
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename();
      if (name.rfind("wal-", 0) != 0) continue;
      std::string seg = ReadAll(e.path());
      while (!seg.empty() && seg.back() == '\0') seg.pop_back();
      if (!seg.empty()) Write(out / "wal_reader" / "segment", seg);
      if (seg.size() > 100)
        Write(out / "wal_reader" / "segment-torn", seg.substr(0, seg.size() - 9));
    }
  }

  // Pages: one of each type, as the page target reads them (id, flags, bytes).
  const std::string data = ReadAll(dir / "grove.data");
  std::map<uint16_t, int> taken;
  for (grove::PageId id = 0; (id + 1) * grove::kPageSize <= data.size(); ++id) {
    const char* p = data.data() + id * grove::kPageSize;
    if (!grove::page::Verify(p, id).ok() || taken[grove::page::Type(p)]++ >= 2) continue;
    std::string seed(8, '\0');
    grove::EncodeFixed64(seed.data(), id);
    seed.push_back('\0');
    seed.append(p, grove::kPageSize);
    Write(out / "page" / ("type" + std::to_string(grove::page::Type(p)) + "-" + std::to_string(id)),
          seed);
  }

  // Requests: selector byte, four limit bytes, then the message.
  auto request = [&](int selector, const google::protobuf::Message& m, const std::string& name) {
    Write(out / "request" / name,
          std::string(1, static_cast<char>(selector)) + "\x20\x40\x10\x40" + m.SerializeAsString());
  };
  grove::v1::GetRequest get;
  get.set_key("key");
  request(0, get, "get");
  grove::v1::PutRequest put;
  put.set_key("key");
  put.set_value("value");
  request(1, put, "put");
  grove::v1::DeleteRequest del;
  del.set_key("key");
  request(2, del, "delete");
  grove::v1::BatchGetRequest bg;
  bg.add_keys("a");
  bg.add_keys("b");
  request(3, bg, "batch_get");
  grove::v1::BatchInsertRequest bi;
  auto* m = bi.add_mutations();
  m->set_type(grove::v1::Mutation::PUT);
  m->set_key("a");
  m->set_value("1");
  m = bi.add_mutations();
  m->set_type(grove::v1::Mutation::DELETE);
  m->set_key("b");
  request(4, bi, "batch_insert");
  grove::v1::ScanRequest scan;
  scan.set_start("a");
  scan.set_end("z");
  scan.set_limit(10);
  request(5, scan, "scan");

  // Recovery: edit lists ([file][offset u32][op][len][bytes]); the empty one opens the template.
  Write(out / "recovery" / "unchanged", "");
  auto edit = [](uint8_t file, uint32_t off, uint8_t op, const std::string& bytes) {
    std::string e(1, static_cast<char>(file));
    char o[4];
    grove::EncodeFixed32(o, off);
    e.append(o, 4);
    e.push_back(static_cast<char>(op));
    e.push_back(static_cast<char>(bytes.size()));
    return e + bytes;
  };
  for (uint8_t file = 0; file < 5; ++file) {
    Write(out / "recovery" / ("xor-file" + std::to_string(file)), edit(file, 5000, 1, "\x01"));
    Write(out / "recovery" / ("truncate-file" + std::to_string(file)), edit(file, 9000, 3, ""));
  }
  fs::remove_all(dir);
  return 0;
}
