// Corruption sweep (docs/reliability.md, "Corruption"). One golden data directory holds a
// checkpointed tree (inner nodes, leaves, blobs, epoch-map pages), two manifests, a double-write
// file, and about 1.7 WAL segments of batches written after the last checkpoint (the process
// "died" without closing, so opening replays them). Each injection copies the directory, damages
// it in one way, opens it and reads every key (point reads and a full scan) and runs Verify().
//
// The rule: damage is either refused at open with DATA_LOSS and a message, or reported as DATA_LOSS
// by the reads and Verify() that touch it, or harmless (it hit bytes nothing reads: a free page, an
// old image, padding). A read never returns a wrong value and never fails with another code; the
// process never crashes (run it under ASan: `make test-asan`). Torn WAL tails are the one damage
// that must be repaired silently: the state is then the history up to some batch, never a mix.
//
// GROVE_RELIABILITY_SCALE multiplies the injections per class (default 20).

#include <filesystem>
#include <functional>
#include <random>
#include <set>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "engine/db_test_util.h"
#include "io/fault_backend.h"
#include "page/page.h"
#include "reliability/report.h"
#include "reliability/tagged_value.h"

namespace grove::testing {
namespace {

namespace fs = std::filesystem;
using Model = std::map<std::string, std::string>;

constexpr uint64_t kKeys = 6000;
constexpr uint64_t kTailBatches = 4000;
constexpr uint64_t kMaxUnsynced = 64 << 10;

std::string BaseKey(uint64_t i) { return EncodeU64Key(i); }
std::string FreshKey(uint64_t i) { return "fresh/" + EncodeU64Key(i); }

Options SweepOptions(const std::string& dir, std::shared_ptr<IoBackend> io = nullptr) {
  Options o = SmallOptions(dir);
  o.cache_bytes = 16 << 20;
  o.direct_io = false;  // many opens; detection does not depend on the IO mode
  o.checkpoint.dirty_fraction = 0.45;
  o.checkpoint.interval_seconds = 0;
  o.wal.segment_bytes = 1 << 20;
  o.wal.max_unsynced_bytes = kMaxUnsynced;
  o.max_batch_bytes = 16 << 10;
  o.io_backend = std::move(io);
  return o;
}

std::string ReadFileBytes(const std::string& path) {
  std::string s;
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return s;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) s.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return s;
}

void WriteAt(const std::string& path, uint64_t offset, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

// The golden directory, built once: the models of every stage and the data file of an older
// checkpoint (the source of stale page images).
struct Golden {
  TempDir dir;     // with a WAL tail to replay
  TempDir closed;  // the same before the tail: cleanly closed, nothing to replay
  std::vector<std::string> tail_segments;
  std::string old_data;  // grove.data after the first checkpoint
  Model checkpointed;    // state at the last checkpoint
  std::vector<WriteBatch> tail;
  std::vector<Model> tail_models;  // tail_models[k]: state after k tail batches (sparse: see below)
  Model final_state;
};

// Batch k of the tail: a fresh key, an overwrite and a delete of base keys.
WriteBatch TailBatch(uint64_t k, std::mt19937_64* rng, uint64_t* seq) {
  WriteBatch b;
  const std::string fresh = FreshKey(k);
  b.Put(fresh, MakeTaggedValue(fresh, 2, ++*seq, 80 + (*rng)() % 200));
  const std::string over = BaseKey((*rng)() % kKeys);
  b.Put(over, MakeTaggedValue(over, 2, ++*seq, 80 + (*rng)() % 200));
  b.Delete(BaseKey((*rng)() % kKeys));
  return b;
}

void Apply(const WriteBatch& b, Model* m) {
  b.ForEach([&](WriteBatch::OpType t, Slice k, Slice v) {
     if (t == WriteBatch::OpType::kPut) {
       (*m)[std::string(k)] = std::string(v);
     } else {
       m->erase(std::string(k));
     }
     return Status::Ok();
   }).IgnoreError();
}

std::unique_ptr<Golden> BuildGolden() {
  auto g = std::make_unique<Golden>();
  std::mt19937_64 rng(99);
  uint64_t seq = 0;
  Model m;
  {
    auto db = Db::Open(SweepOptions(g->dir.path()));
    if (!db.ok()) {
      ADD_FAILURE() << db.status().ToString();
      return g;
    }
    WriteBatch b;
    for (uint64_t j = 0; j < kKeys; ++j) {
      const std::string k = BaseKey(j);
      const size_t len = j % 40 == 0 ? 1500 + rng() % 3000 : 40 + rng() % 160;
      b.Put(k, MakeTaggedValue(k, 1, ++seq, len));
      if (b.PayloadBytes() > 8000 || j + 1 == kKeys) {
        EXPECT_OK((*db)->Write(b));
        Apply(b, &m);
        b.Clear();
      }
    }
    EXPECT_OK((*db)->Close());
  }
  g->old_data = ReadFileBytes(g->dir.Sub("grove.data"));
  {
    auto db = Db::Open(SweepOptions(g->dir.path()));
    EXPECT_TRUE(db.ok());
    for (uint64_t n = 0; n < 1500; ++n) {
      WriteBatch b;
      const std::string k = BaseKey(rng() % kKeys);
      if (n % 5 == 0) {
        b.Delete(k);
      } else {
        b.Put(k, MakeTaggedValue(k, 1, ++seq, n % 30 == 0 ? 2000 : 40 + rng() % 160));
      }
      EXPECT_OK((*db)->Write(b));
      Apply(b, &m);
    }
    EXPECT_OK((*db)->Close());  // final checkpoint; the next open starts a fresh WAL segment
  }
  g->checkpointed = m;
  fs::copy(g->dir.path(), g->closed.path(), fs::copy_options::recursive);
  std::set<std::string> before_tail;
  for (const auto& e : fs::directory_iterator(g->dir.path()))
    before_tail.insert(e.path().filename());
  // The tail: logged, never checkpointed; the process dies with the page cache intact.
  auto inner = NewIoBackend({.kind = IoBackendKind::kPsync}, nullptr);
  auto fb = std::make_shared<FaultInjectionBackend>(*inner, 1);
  {
    auto db = Db::Open(SweepOptions(g->dir.path(), fb));
    EXPECT_TRUE(db.ok());
    for (uint64_t k = 0; k < kTailBatches; ++k) {
      g->tail.push_back(TailBatch(k, &rng, &seq));
      EXPECT_OK((*db)->Write(g->tail.back()));
    }
    fb->CrashAfter(0);
  }
  EXPECT_OK(fb->SimulatePowerLoss(FaultInjectionBackend::PowerLoss::kKeepUnsynced));
  for (const auto& e : fs::directory_iterator(g->dir.path())) {
    const std::string name = e.path().filename();
    if (name.rfind("wal-", 0) == 0 && !before_tail.count(name)) g->tail_segments.push_back(name);
  }
  std::sort(g->tail_segments.begin(), g->tail_segments.end());
  g->final_state = m;
  for (const WriteBatch& b : g->tail) Apply(b, &g->final_state);
  return g;
}

// How one injection ended.
enum class Outcome { kRefused, kDetected, kNoEffect, kWrongData, kWrongStatus };

struct ClassStats {
  uint64_t injected = 0;
  std::map<Outcome, uint64_t> outcomes;
  std::vector<std::string> failures;  // the first few wrong-data / wrong-status cases
};

// Reads every key the directory may hold. `expect` is the state it must show wherever a read
// succeeds; for torn WAL tails the caller passes a chooser that derives it from what was read.
Outcome CheckOpened(Db* db, const std::function<const Model*(const Model&)>& expect,
                    std::string* why) {
  bool detected = false;
  bool scan_failed = false;
  // A full scan first: it shows which state the directory is in.
  Model scanned;
  {
    auto it = db->NewIterator(ScanOptions());
    if (!it.ok()) {
      if (it.status().code() != StatusCode::kDataLoss) {
        *why = "NewIterator: " + it.status().ToString();
        return Outcome::kWrongStatus;
      }
      detected = scan_failed = true;
    } else {
      for (; (*it)->Valid(); (*it)->Next()) {
        scanned[std::string((*it)->key())] = std::string((*it)->value());
      }
      if (!(*it)->status().ok()) {
        if ((*it)->status().code() != StatusCode::kDataLoss) {
          *why = "scan: " + (*it)->status().ToString();
          return Outcome::kWrongStatus;
        }
        detected = scan_failed = true;
      }
    }
  }
  const Model* want = expect(scanned);
  if (want == nullptr) {
    *why = "the scanned state is no state of the history";
    return Outcome::kWrongData;
  }
  for (const auto& [k, v] : scanned) {
    auto w = want->find(k);
    if (w == want->end() || w->second != v) {
      *why = "scan returned a wrong value for a key";
      return Outcome::kWrongData;
    }
  }
  // Point reads of every key that exists anywhere in the history.
  auto get = [&](const std::string& k) -> Outcome {
    std::string v;
    auto found = db->Get(k, &v);
    if (!found.ok()) {
      if (found.status().code() != StatusCode::kDataLoss) {
        *why = "Get: " + found.status().ToString();
        return Outcome::kWrongStatus;
      }
      detected = true;
      return Outcome::kDetected;
    }
    auto w = want->find(k);
    if (*found != (w != want->end()) || (*found && v != w->second)) {
      *why = "Get returned " + std::string(*found ? "a wrong value" : "absent") + " for a key";
      return Outcome::kWrongData;
    }
    return Outcome::kNoEffect;
  };
  for (uint64_t i = 0; i < kKeys; ++i) {
    if (Outcome o = get(BaseKey(i)); o == Outcome::kWrongData || o == Outcome::kWrongStatus) {
      return o;
    }
  }
  for (uint64_t i = 0; i < kTailBatches; ++i) {
    if (Outcome o = get(FreshKey(i)); o == Outcome::kWrongData || o == Outcome::kWrongStatus) {
      return o;
    }
  }
  // A scan that ended without an error must have seen everything: damage never hides keys.
  if (!scan_failed && scanned != *want) {
    *why = "the scan skipped or added keys without an error";
    return Outcome::kWrongData;
  }
  VerifyReport report;
  const Status vs = db->Verify(&report);
  if (!vs.ok() && vs.code() != StatusCode::kDataLoss) {
    *why = "Verify: " + vs.ToString();
    return Outcome::kWrongStatus;
  }
  detected |= !vs.ok() || !report.problems.empty();
  return detected ? Outcome::kDetected : Outcome::kNoEffect;
}

class CorruptionSweepTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { golden_ = BuildGolden().release(); }
  static void TearDownTestSuite() {
    delete golden_;
    golden_ = nullptr;
  }

  // Copies a golden directory (with its WAL tail, or `closed`), lets `damage` change the copy,
  // opens it and classifies. `expect` as in CheckOpened; null means the golden's own final state.
  void Inject(const std::string& cls, const std::function<void(const std::string& dir)>& damage,
              std::function<const Model*(const Model&)> expect = nullptr, bool closed = false) {
    ClassStats& st = stats_[cls];
    ++st.injected;
    TempDir work;
    fs::copy(closed ? golden_->closed.path() : golden_->dir.path(), work.path(),
             fs::copy_options::recursive);
    fs::remove(work.Sub("LOCK"));
    damage(work.path());
    if (!expect) {
      const Model* m = closed ? &golden_->checkpointed : &golden_->final_state;
      expect = [m](const Model&) { return m; };
    }
    // The process dies after the checks: closing would write a checkpoint per injection.
    auto inner = NewIoBackend({.kind = IoBackendKind::kPsync, .psync_threads = 0}, nullptr);
    auto fb = std::make_shared<FaultInjectionBackend>(*inner, 1);
    auto db = Db::Open(SweepOptions(work.path(), fb));
    Outcome o;
    std::string why;
    if (!db.ok()) {
      o = db.status().code() == StatusCode::kDataLoss && !db.status().message().empty()
              ? Outcome::kRefused
              : Outcome::kWrongStatus;
      why = "open: " + db.status().ToString();
    } else {
      o = CheckOpened(db->get(), expect, &why);
      fb->CrashAfter(0);
    }
    ++st.outcomes[o];
    if ((o == Outcome::kWrongData || o == Outcome::kWrongStatus) && st.failures.size() < 5) {
      st.failures.push_back(why);
    }
  }

  // Reports every class and fails on wrong data or a wrong status.
  void Report(const char* test) {
    for (const auto& [cls, st] : stats_) {
      auto n = [&](Outcome o) {
        auto it = st.outcomes.find(o);
        return it == st.outcomes.end() ? uint64_t{0} : it->second;
      };
      EmitReport({{"test", test},
                  {"class", cls},
                  {"injected", st.injected},
                  {"refused_open", n(Outcome::kRefused)},
                  {"detected_on_read", n(Outcome::kDetected)},
                  {"no_effect", n(Outcome::kNoEffect)},
                  {"wrong_data", n(Outcome::kWrongData)},
                  {"wrong_status", n(Outcome::kWrongStatus)}});
      EXPECT_EQ(n(Outcome::kWrongData), 0u) << cls;
      EXPECT_EQ(n(Outcome::kWrongStatus), 0u) << cls;
      for (const std::string& f : st.failures) ADD_FAILURE() << cls << ": " << f;
    }
  }

  uint64_t Injections() const { return 20 * ReliabilityScale(); }

  static Golden* golden_;
  std::map<std::string, ClassStats> stats_;
  std::mt19937_64 rng_{ReliabilitySeed()};
};

Golden* CorruptionSweepTest::golden_ = nullptr;

// Pages of the golden data file whose image is valid: the targets of page damage.
std::vector<PageId> ValidPages(const std::string& data) {
  std::vector<PageId> out;
  for (PageId id = 0; (id + 1) * kPageSize <= data.size(); ++id) {
    if (page::Verify(data.data() + id * kPageSize, id).ok()) out.push_back(id);
  }
  return out;
}

TEST_F(CorruptionSweepTest, DamagedPages) {
  const std::string data = ReadFileBytes(golden_->dir.Sub("grove.data"));
  const std::vector<PageId> valid = ValidPages(data);
  ASSERT_GT(valid.size(), 50u);
  // Pages whose older image (first checkpoint) differs but is itself valid: stale candidates.
  std::vector<PageId> stale;
  for (PageId id : valid) {
    const size_t off = id * kPageSize;
    if (id >= 2 && off + kPageSize <= golden_->old_data.size() &&
        page::Verify(golden_->old_data.data() + off, id).ok() &&
        golden_->old_data.compare(off, kPageSize, data, off, kPageSize) != 0) {
      stale.push_back(id);
    }
  }
  ASSERT_GT(stale.size(), 10u);
  auto pick = [&](const std::vector<PageId>& v) { return v[rng_() % v.size()]; };
  const std::string path = "grove.data";
  // Each class twice: on the directory whose WAL tail recovery replays (damage met while
  // replaying), and on the cleanly closed one (damage met by the reads).
  for (bool closed : {false, true}) {
    const std::string suffix = closed ? " (closed)" : " (replay)";
    for (uint64_t n = 0; n < Injections(); ++n) {
      Inject(
          "bit_flip" + suffix,
          [&](const std::string& dir) {
            const PageId id = pick(valid);
            const uint64_t byte = rng_() % kPageSize;
            std::string b(1, static_cast<char>(data[id * kPageSize + byte] ^ (1 << (rng_() % 8))));
            WriteAt(dir + "/" + path, id * kPageSize + byte, b);
          },
          nullptr, closed);
      Inject(
          "zeroed_page" + suffix,
          [&](const std::string& dir) {
            WriteAt(dir + "/" + path, pick(valid) * kPageSize, std::string(kPageSize, '\0'));
          },
          nullptr, closed);
      Inject(
          "torn_sector" + suffix,
          [&](const std::string& dir) {
            // One 512-byte sector of a page replaced by zeros or garbage, as a torn write leaves
            // it.
            std::string s(512, '\0');
            if (rng_() % 2) {
              for (char& c : s) c = static_cast<char>(rng_());
            }
            WriteAt(dir + "/" + path, pick(valid) * kPageSize + (rng_() % 8) * 512, s);
          },
          nullptr, closed);
      Inject(
          "stale_page" + suffix,
          [&](const std::string& dir) {
            const PageId id = pick(stale);
            WriteAt(dir + "/" + path, id * kPageSize,
                    golden_->old_data.substr(id * kPageSize, kPageSize));
          },
          nullptr, closed);
      Inject(
          "misdirected_write" + suffix,
          [&](const std::string& dir) {
            // The image of page a lands at page b (b's own content is lost).
            PageId a = pick(valid), b = pick(valid);
            while (b == a) b = pick(valid);
            WriteAt(dir + "/" + path, b * kPageSize, data.substr(a * kPageSize, kPageSize));
          },
          nullptr, closed);
    }
  }
  Report("corruption");
}

TEST_F(CorruptionSweepTest, DamagedMetadataFiles) {
  std::vector<std::string> manifests;
  for (const auto& e : fs::directory_iterator(golden_->dir.path())) {
    const std::string name = e.path().filename();
    if (name.rfind("MANIFEST-", 0) == 0) manifests.push_back(name);
  }
  std::sort(manifests.begin(), manifests.end());
  ASSERT_FALSE(manifests.empty());
  const std::string newest = manifests.back();
  const uint64_t manifest_size = fs::file_size(golden_->dir.Sub(newest));
  const uint64_t dw_size = fs::file_size(golden_->dir.Sub("DOUBLEWRITE"));
  for (uint64_t n = 0; n < Injections(); ++n) {
    Inject("superblock", [&](const std::string& dir) {
      // Either slot, anywhere in its first 512 bytes (where the fields live).
      const uint64_t off = (rng_() % 2) * kPageSize + rng_() % 512;
      WriteAt(dir + "/grove.data", off, std::string(1, static_cast<char>(rng_() | 1)));
    });
    Inject("manifest", [&](const std::string& dir) {
      WriteAt(dir + "/" + newest, rng_() % manifest_size,
              std::string(1, static_cast<char>(rng_() | 1)));
    });
    Inject("doublewrite", [&](const std::string& dir) {
      WriteAt(dir + "/DOUBLEWRITE", rng_() % dw_size, std::string(1, static_cast<char>(rng_())));
    });
  }
  Report("corruption");
}

// The WAL segments hold only the tail (the last close started a fresh segment). Damage within
// max_unsynced_bytes of the end of the written log is a torn tail: repaired, and the state is the
// history up to some batch. Damage further back is mid-log corruption: refusing to open.
TEST_F(CorruptionSweepTest, DamagedLog) {
  const std::vector<std::string>& segments = golden_->tail_segments;
  ASSERT_GE(segments.size(), 2u) << "the tail should span more than one segment";
  const std::string last = segments.back();
  const std::string bytes = ReadFileBytes(golden_->dir.Sub(last));
  uint64_t end = bytes.size();
  while (end > 0 && bytes[end - 1] == '\0') --end;  // the end of the written data
  ASSERT_GT(end, 2 * kMaxUnsynced) << "the last segment should hold more than two unsynced windows";

  // The state after the first k tail batches, k being how many fresh keys the scanned state
  // holds. Rebuilt for each check: keeping all 4,000 states took 7.8 GB (and 24 GB under TSan).
  Model expected;
  auto prefix_state = [&](const Model& scanned) -> const Model* {
    uint64_t k = 0;
    while (k < kTailBatches && scanned.count(FreshKey(k))) ++k;
    expected = golden_->checkpointed;
    for (uint64_t i = 0; i < k; ++i) Apply(golden_->tail[i], &expected);
    return &expected;
  };

  for (uint64_t n = 0; n < Injections(); ++n) {
    Inject(
        "wal_torn_tail",
        [&](const std::string& dir) {
          const uint64_t off = end - 1 - rng_() % (kMaxUnsynced - 1);
          switch (rng_() % 3) {
            case 0:  // the file ends early (the size was journaled, the data was not)
              fs::resize_file(dir + "/" + last, off);
              break;
            case 1:  // zeros from here to the end, as a dropped write leaves them
              WriteAt(dir + "/" + last, off, std::string(end - off, '\0'));
              break;
            default:  // one torn 512-byte sector of garbage
              std::string s(std::min<uint64_t>(512, end - off), '\0');
              for (char& c : s) c = static_cast<char>(rng_());
              WriteAt(dir + "/" + last, off, s);
          }
        },
        prefix_state);
    Inject("wal_mid_log", [&](const std::string& dir) {
      // A bit flip in a synced record: in an earlier segment, or far from the end of the last.
      const bool earlier = rng_() % 2 == 0;
      const std::string seg = earlier ? segments[rng_() % (segments.size() - 1)] : last;
      const uint64_t limit =
          earlier ? fs::file_size(golden_->dir.Sub(seg)) : end - 2 * kMaxUnsynced;
      const uint64_t off = rng_() % limit;
      const std::string cur = ReadFileBytes(dir + "/" + seg).substr(off, 1);
      WriteAt(dir + "/" + seg, off, std::string(1, static_cast<char>(cur[0] ^ (1 << rng_() % 8))));
    });
  }
  Report("corruption");
}

}  // namespace
}  // namespace grove::testing
