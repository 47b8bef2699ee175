#include "reliability/crash_workload.h"

#include <algorithm>
#include <random>

#include "reliability/tagged_value.h"
#include "util/coding.h"

namespace grove::testing {
namespace {

// 96 equal bytes then the number: separators cannot be truncated below ~97 bytes, so inner nodes
// hold ~35 children and a few hundred keys make a three-level tree.
std::string LongKey(uint64_t i) { return std::string(96, 'k') + EncodeU64Key(i); }

constexpr uint64_t kFarExpiryMs = 4102444800000;  // 2100-01-01

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<CrashStep> StructureWorkload(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<CrashStep> steps;
  uint64_t seq = 0;
  auto value = [&](const std::string& key) {
    const size_t len = rng() % 20 == 0 ? 1500 + rng() % 1500 : 60 + rng() % 140;
    return MakeTaggedValue(key, 0, ++seq, len);
  };
  auto checkpoint = [&] {
    CrashStep s;
    s.checkpoint = true;
    steps.push_back(std::move(s));
  };
  // Grow: the even keys in ascending batches (the rightmost leaf splits), then the odd keys
  // (leaves in the middle split).
  constexpr uint64_t kKeys = 720;
  std::vector<uint64_t> order;
  for (uint64_t i = 0; i < kKeys; i += 2) order.push_back(i);
  for (uint64_t i = 1; i < kKeys; i += 2) order.push_back(i);
  for (size_t b = 0; b * 16 < order.size(); ++b) {
    CrashStep s;
    for (size_t j = b * 16; j < std::min(order.size(), b * 16 + 16); ++j) {
      const std::string k = LongKey(order[j]);
      s.batch.Put(k, value(k));
    }
    steps.push_back(std::move(s));
    if (b % 6 == 5) checkpoint();
  }
  checkpoint();
  // Churn: single puts (some out of line) and deletes.
  for (int n = 0; n < 24; ++n) {
    CrashStep s;
    const std::string k = LongKey(rng() % kKeys);
    const uint64_t kind = rng() % 3;
    if (kind == 0) {
      s.batch.Delete(k);
    } else if (kind == 1 && n % 2 == 0) {
      // An expiry far in the future (fixed, so that every run issues the same IOs): the value
      // stays visible, and its cell carries the expiry through the log and the pages.
      s.batch.PutExpiring(k, value(k), kFarExpiryMs);
    } else {
      s.batch.Put(k, value(k));
    }
    steps.push_back(std::move(s));
  }
  checkpoint();
  // Shrink: delete ranges until a few keys remain: merges, then the root collapses.
  for (uint64_t start = 0; start + 60 < kKeys; start += 48) {
    CrashStep s;
    if ((start / 48) % 2 == 0) {
      for (uint64_t i = start; i < start + 48; ++i) s.batch.Delete(LongKey(i));
    } else {
      s.range_delete = true;
      s.start = LongKey(start);
      s.end = LongKey(start + 48);
    }
    steps.push_back(std::move(s));
    // Often enough that the inner merges and the root's collapse land in different checkpoints.
    if ((start / 48) % 3 == 2) checkpoint();
  }
  checkpoint();
  return steps;
}

void ApplyStep(const CrashStep& step, Model* model) {
  if (step.checkpoint) return;
  if (step.range_delete) {
    model->erase(model->lower_bound(step.start), model->lower_bound(step.end));
    return;
  }
  step.batch
      .ForEach([&](WriteBatch::OpType t, Slice k, Slice v) {
        if (t == WriteBatch::OpType::kPut || t == WriteBatch::OpType::kPutExpiring) {
          (*model)[std::string(k)] = std::string(v);
        } else {
          model->erase(std::string(k));
        }
        return Status::Ok();
      })
      .IgnoreError();
}

Status RunStep(Db* db, const CrashStep& step) {
  if (step.checkpoint) return db->Checkpoint();
  if (step.range_delete) {
    DeleteRangeResult r;
    return db->DeleteRange(step.start, step.end, 0, &r);
  }
  return db->Write(step.batch);
}

std::set<std::string> StructureChanges(const IndexStats& a, const IndexStats& b) {
  std::set<std::string> out;
  if (b.height > a.height) out.insert("root-split");
  if (b.height < a.height) out.insert("root-collapse");
  if (b.inner_pages > a.inner_pages && b.height == a.height) out.insert("inner-split");
  if (b.inner_pages < a.inner_pages && b.height == a.height) out.insert("inner-merge");
  if (b.leaf_pages > a.leaf_pages) out.insert("split");
  if (b.leaf_pages < a.leaf_pages) out.insert("merge");
  return out;
}

std::vector<std::string> StepContexts(const std::vector<CrashStep>& steps,
                                      const IndexStats& initial,
                                      const std::vector<IndexStats>& shapes) {
  // Only the most telling change is named: a root split implies leaf splits.
  auto name = [](const std::set<std::string>& c) {
    std::string grow, shrink;
    for (const char* g : {"root-split", "inner-split", "split"}) {
      if (c.count(g)) {
        grow = g;
        break;
      }
    }
    for (const char* s : {"root-collapse", "inner-merge", "merge"}) {
      if (c.count(s)) {
        shrink = s;
        break;
      }
    }
    if (grow.empty() && shrink.empty()) return std::string();
    return ":" + grow + (!grow.empty() && !shrink.empty() ? "+" : "") + shrink;
  };
  std::vector<std::string> out;
  std::set<std::string> since_checkpoint;
  IndexStats prev = initial;
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::set<std::string> c = StructureChanges(prev, shapes[i]);
    prev = shapes[i];
    if (steps[i].checkpoint) {
      out.push_back("checkpoint" + name(since_checkpoint));
      since_checkpoint.clear();
    } else {
      out.push_back("write" + name(c));
      since_checkpoint.insert(c.begin(), c.end());
    }
  }
  return out;
}

std::string IoClassifier::Classify(const FaultInjectionBackend::OpInfo& info) {
  using K = FaultInjectionBackend::OpKind;
  const std::string base = Basename(info.path);
  const std::string kind(FaultInjectionBackend::OpKindName(info.kind));
  if (info.kind == K::kSyncDir) return "dir.sync";
  if (base.rfind("wal-", 0) == 0) return "wal." + kind;
  if (base == "DOUBLEWRITE") return "doublewrite." + kind;
  if (base.rfind("MANIFEST-", 0) == 0) return "manifest." + kind;
  if (base == "grove.data") {
    if (info.kind == K::kWrite) {
      last_data_write_was_superblock_ = info.offset < 2 * 4096;
      return last_data_write_was_superblock_ ? "superblock.write" : "inplace.write";
    }
    if (info.kind == K::kSync) {
      return last_data_write_was_superblock_ ? "superblock.sync" : "inplace.sync";
    }
    if (info.kind == K::kAllocate) return "data.reserve";
    return "data." + kind;
  }
  // A variant's own files ("<variant>-<n>..."): one class per file kind, whatever the number.
  std::string name;
  for (char c : base) {
    if (c < '0' || c > '9') {
      name.push_back(c);
    } else if (name.empty() || name.back() != 'N') {
      name.push_back('N');
    }
  }
  return name + "." + kind;
}

}  // namespace grove::testing
