#include "bench/replay.h"

#include <algorithm>

#include "bench/key_set.h"
#include "trace/key_sketch.h"

namespace grove::bench {
namespace {

// gRPC status codes the trace stores (the numbers are gRPC's).
constexpr uint8_t kCodeOk = 0;
constexpr uint8_t kCodeFailedPrecondition = 9;

// What the trace showed of a key before the current record.
enum class Seen : uint8_t { kUnseen, kPresent, kAbsent };

OpType TypeOf(trace::Op op) {
  switch (op) {
    case trace::Op::kGet:
      return OpType::kRead;
    case trace::Op::kBatchGet:
      return OpType::kBatchRead;
    case trace::Op::kPut:
      return OpType::kUpdate;
    case trace::Op::kDelete:
      return OpType::kDelete;
    case trace::Op::kBatchInsert:
      return OpType::kBatchWrite;
    case trace::Op::kDeleteRange:
      return OpType::kDeleteRange;
    case trace::Op::kScan:
      return OpType::kScan;
  }
  return OpType::kRead;
}

bool IsRange(trace::Op op) { return op == trace::Op::kScan || op == trace::Op::kDeleteRange; }

// The trace's distinct keys in order, and the scaled map: rank -> a loaded key.
class ScaledKeys {
 public:
  ScaledKeys(const std::vector<std::string>& distinct, const std::vector<uint64_t>& sorted_loaded)
      : distinct_(distinct), loaded_(sorted_loaded) {}

  size_t RankOf(const std::string& key) const {
    return static_cast<size_t>(std::lower_bound(distinct_.begin(), distinct_.end(), key) -
                               distinct_.begin());
  }

  // The replay key of rank `r`; `absent` puts it just after its loaded key, where the load wrote
  // nothing.
  std::string KeyOf(size_t r, bool absent) const {
    const unsigned __int128 scaled =
        static_cast<unsigned __int128>(r) * loaded_.size() / distinct_.size();
    std::string k = EncodeKey(loaded_[static_cast<size_t>(scaled)]);
    if (absent) k.push_back('\0');
    return k;
  }

 private:
  const std::vector<std::string>& distinct_;
  const std::vector<uint64_t>& loaded_;
};

// The projected map: a key -> the loaded key nearest its projection.
class ProjectedKeys {
 public:
  ProjectedKeys(size_t prefix, const std::vector<uint64_t>& sorted_loaded)
      : prefix_(prefix), loaded_(sorted_loaded) {}

  uint64_t Project(const std::string& key) const { return trace::KeyProjection(key, prefix_); }

  std::string KeyOf(const std::string& key, bool absent) const {
    const uint64_t p = Project(key);
    if (absent) return EncodeKey(p) + std::string(1, '\0');
    auto it = std::lower_bound(loaded_.begin(), loaded_.end(), p);
    if (it == loaded_.end() || (it != loaded_.begin() && p - *(it - 1) < *it - p)) --it;
    return EncodeKey(*it);
  }

 private:
  const size_t prefix_;
  const std::vector<uint64_t>& loaded_;
};

}  // namespace

StatusOr<ReplayPlan> LoadReplay(const std::string& path, const ReplayOptions& options,
                                const std::vector<uint64_t>& sorted_loaded) {
  const bool scaled = options.keys != ReplayOptions::Keys::kExact;
  const bool projected = options.keys == ReplayOptions::Keys::kProjected;
  if (scaled && sorted_loaded.empty()) {
    return Status::InvalidArgument(
        "trace:" + path +
        ": scaled keys map the trace onto loaded data, and none is loaded: put 'load' first in "
        "--workloads, or replay with --replay-keys exact against the traced data");
  }
  GROVE_ASSIGN_OR_RETURN(auto reader, trace::TraceReader::Open(path));
  if (!scaled && (reader->header().flags & trace::header_flags::kKeysHashed) != 0) {
    return Status::InvalidArgument("trace:" + path +
                                   ": its keys were hashed when traced, so no database holds "
                                   "them: replay it with --replay-keys scaled");
  }
  TraceShape shape;
  if (projected) {
    GROVE_ASSIGN_OR_RETURN(shape, ReadTraceShape(path));
  }
  const ProjectedKeys projection(shape.prefix, sorted_loaded);
  ReplayPlan plan;
  plan.path = path;
  plan.header = reader->header();
  plan.options = options;

  std::vector<trace::Record> records;
  trace::Record r;
  while (true) {
    GROVE_ASSIGN_OR_RETURN(bool more, reader->Next(&r));
    if (!more) break;
    ++plan.traced_records;
    const bool conditional = (r.flags & trace::record_flags::kPrecondition) != 0;
    if (r.code != kCodeOk && !(conditional && r.code == kCodeFailedPrecondition)) {
      ++plan.skipped;
      continue;
    }
    if (IsRange(r.op) && r.entries.size() != 2) {
      return Status::DataLoss("trace:" + path + ": a " + trace::OpName(r.op) + " record holds " +
                              std::to_string(r.entries.size()) + " keys, not 2");
    }
    if (r.entries.empty()) {
      ++plan.skipped;  // a batch call with nothing in it did no work
      continue;
    }
    records.push_back(std::move(r));
    r = trace::Record();
  }
  plan.truncated = reader->truncated();
  if (records.empty()) {
    return Status::InvalidArgument("trace:" + path + ": nothing to replay (" +
                                   std::to_string(plan.traced_records) + " records, " +
                                   std::to_string(plan.skipped) + " of failed calls)");
  }

  // Every key the trace names, ranked; scan and range-delete ends that are empty mean "to the
  // last key" and are not keys.
  std::vector<std::string> distinct;
  for (const trace::Record& rec : records) {
    for (size_t i = 0; i < rec.entries.size(); ++i) {
      if (IsRange(rec.op) && rec.entries[i].key.empty()) continue;
      distinct.push_back(rec.entries[i].key);
    }
  }
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  plan.distinct_keys = distinct.size();
  // What each key's first use showed, by rank; a range op's bounds are not a use of a key.
  std::vector<Seen> first(distinct.size(), Seen::kUnseen);
  const ScaledKeys map(distinct, sorted_loaded);
  for (const trace::Record& rec : records) {
    if (IsRange(rec.op)) continue;
    const bool read = rec.op == trace::Op::kGet || rec.op == trace::Op::kBatchGet;
    // A read that found nothing saw each of its keys absent; a batch that found some of them
    // says not which, so its keys count as present.
    const bool missed = read && rec.result == 0;
    for (const trace::Entry& e : rec.entries) {
      Seen& f = first[map.RankOf(e.key)];
      if (f == Seen::kUnseen) f = missed ? Seen::kAbsent : Seen::kPresent;
    }
  }
  auto absent_first = [&](size_t k) { return first[k] == Seen::kAbsent; };
  plan.absent_keys = static_cast<uint64_t>(std::count(first.begin(), first.end(), Seen::kAbsent));

  std::vector<bool> created(distinct.size(), false);  // absent-first keys put since
  auto replay_key = [&](const std::string& k, bool bound) -> std::string {
    if (!scaled) return k;
    if (bound && k.empty()) return std::string();
    if (projected && bound) return EncodeKey(projection.Project(k));
    const size_t rank = map.RankOf(k);
    if (projected) return projection.KeyOf(k, absent_first(rank));
    return map.KeyOf(rank, !bound && absent_first(rank));
  };
  plan.ops.reserve(records.size());
  for (trace::Record& rec : records) {
    ReplayOp op;
    op.micros = rec.micros;
    op.type = TypeOf(rec.op);
    op.conditional = (rec.flags & trace::record_flags::kPrecondition) != 0;
    op.apply = rec.code == kCodeOk;
    if (IsRange(rec.op)) {
      op.keys.push_back(replay_key(rec.entries[0].key, /*bound=*/true));
      op.end = replay_key(rec.entries[1].key, /*bound=*/true);
      // A limit of 0 is the server's most; the count the call returned is what it did.
      op.limit = rec.arg > 0 ? rec.arg : std::max<uint64_t>(rec.result, 1);
      op.reverse = (rec.flags & trace::record_flags::kReverse) != 0;
    } else {
      const bool write = rec.op == trace::Op::kPut || rec.op == trace::Op::kDelete ||
                         rec.op == trace::Op::kBatchInsert;
      for (const trace::Entry& e : rec.entries) {
        op.keys.push_back(replay_key(e.key, /*bound=*/false));
        if (!write) continue;
        op.values.push_back(e.has_value ? static_cast<int64_t>(e.value_size) : -1);
        if (e.has_value) plan.max_value_bytes = std::max(plan.max_value_bytes, e.value_size);
        const size_t k = map.RankOf(e.key);
        // The first put of a key the trace saw missing creates it: an insert.
        if (rec.op == trace::Op::kPut && absent_first(k) && !created[k] && op.apply) {
          op.type = OpType::kInsert;
          created[k] = true;
        }
      }
    }
    plan.ops.push_back(std::move(op));
  }
  return plan;
}

StatusOr<TraceShape> ReadTraceShape(const std::string& path) {
  GROVE_ASSIGN_OR_RETURN(auto reader, trace::TraceReader::Open(path));
  std::vector<std::string> keys;
  trace::Record r;
  while (true) {
    GROVE_ASSIGN_OR_RETURN(bool more, reader->Next(&r));
    if (!more) break;
    for (trace::Entry& e : r.entries) {
      if (!e.key.empty()) keys.push_back(std::move(e.key));
    }
  }
  const trace::KeySketch* sketch = reader->sketch();
  const bool has_sketch = sketch != nullptr && !sketch->counts.empty() && sketch->Entries() > 0;
  if (keys.empty() && !has_sketch) {
    return Status::InvalidArgument("trace:" + path + ": names no keys");
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // The smallest and largest keys share what every key in between shares.
  std::string lo = keys.empty() ? sketch->bounds.front() : keys.front();
  std::string hi = keys.empty() ? sketch->bounds.back() : keys.back();
  if (has_sketch) {
    lo = std::min(lo, sketch->bounds.front());
    hi = std::max(hi, sketch->bounds.back());
  }
  TraceShape shape;
  shape.prefix = trace::SharedPrefix(lo, hi);
  shape.points.reserve(keys.size());
  for (const std::string& k : keys) shape.points.push_back(trace::KeyProjection(k, shape.prefix));
  // Sorted keys project in order.
  shape.points.erase(std::unique(shape.points.begin(), shape.points.end()), shape.points.end());
  if (has_sketch) {
    for (const std::string& b : sketch->bounds) {
      shape.cell_bounds.push_back(trace::KeyProjection(b, shape.prefix));
    }
    shape.cell_counts = sketch->counts;
    shape.sketch_keys = sketch->Entries();
  }
  return shape;
}

}  // namespace grove::bench
