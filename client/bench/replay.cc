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

// The projected map: a key -> the loaded key nearest its place.
class ProjectedKeys {
 public:
  ProjectedKeys(const TraceShape& shape, const std::vector<uint64_t>& sorted_loaded)
      : shape_(shape), loaded_(sorted_loaded) {}

  uint64_t Place(const std::string& key) const { return shape_.Place(key); }

  std::string KeyOf(const std::string& key, bool absent) const {
    const uint64_t p = Place(key);
    if (absent) return EncodeKey(p) + std::string(1, '\0');
    auto it = std::lower_bound(loaded_.begin(), loaded_.end(), p);
    if (it == loaded_.end() || (it != loaded_.begin() && p - *(it - 1) < *it - p)) --it;
    return EncodeKey(*it);
  }

 private:
  const TraceShape& shape_;
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
  const ProjectedKeys projection(shape, sorted_loaded);
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

  // How often the trace names each key (range bounds included): a key named once varies in
  // passes other than 0.
  std::vector<uint32_t> uses(distinct.size(), 0);
  for (const trace::Record& rec : records) {
    for (const trace::Entry& e : rec.entries) {
      if (!e.key.empty() || !IsRange(rec.op)) ++uses[map.RankOf(e.key)];
    }
  }
  // The loaded keys a varied key draws from: its sketch cell (projected keys), else its share of
  // the loaded keys around the one it maps to.
  auto vary_range = [&](const std::string& k, size_t rank) -> std::pair<uint64_t, uint64_t> {
    if (!scaled || uses[rank] != 1) return {0, 0};
    const uint64_t n = sorted_loaded.size();
    if (projected && shape.has_sketch()) {
      const int shift = 64 - shape.cell_bits;
      const uint64_t cell = shift == 64 ? 0 : projection.Place(k) >> shift;
      const uint64_t lo_place = shift == 64 ? 0 : cell << shift;
      const auto lo = std::lower_bound(sorted_loaded.begin(), sorted_loaded.end(), lo_place);
      auto hi = sorted_loaded.end();
      if (shift != 64 && cell + 1 < (uint64_t{1} << shape.cell_bits)) {
        hi = std::lower_bound(lo, sorted_loaded.end(), (cell + 1) << shift);
      }
      return {static_cast<uint64_t>(lo - sorted_loaded.begin()), static_cast<uint64_t>(hi - lo)};
    }
    const uint64_t d = distinct.size();
    const auto m = static_cast<uint64_t>(static_cast<unsigned __int128>(rank) * n / d);
    const uint64_t h = std::max<uint64_t>(1, n / (2 * d));
    const uint64_t lo = m > h ? m - h : 0;
    const uint64_t hi = std::min(n, m + h + 1);
    return {lo, hi - lo};
  };
  auto add_vary = [&](ReplayOp* op, const std::string& k) {
    const auto [lo, span] = vary_range(k, map.RankOf(k));
    op->vary_lo.push_back(lo);
    op->vary_span.push_back(span);
    if (span > 0) ++plan.varied_keys;
  };

  std::vector<bool> created(distinct.size(), false);  // absent-first keys put since
  auto replay_key = [&](const std::string& k, bool bound) -> std::string {
    if (!scaled) return k;
    if (bound && k.empty()) return std::string();
    if (projected && bound) return EncodeKey(projection.Place(k));
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
      // A start with no end may move; with an end it would have to move with it.
      if (op.end.empty() && !rec.entries[0].key.empty()) add_vary(&op, rec.entries[0].key);
      // A limit of 0 is the server's most; the count the call returned is what it did.
      op.limit = rec.arg > 0 ? rec.arg : std::max<uint64_t>(rec.result, 1);
      op.reverse = (rec.flags & trace::record_flags::kReverse) != 0;
    } else {
      const bool write = rec.op == trace::Op::kPut || rec.op == trace::Op::kDelete ||
                         rec.op == trace::Op::kBatchInsert;
      for (const trace::Entry& e : rec.entries) {
        op.keys.push_back(replay_key(e.key, /*bound=*/false));
        add_vary(&op, e.key);
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
    if (std::all_of(op.vary_span.begin(), op.vary_span.end(), [](uint64_t s) { return s == 0; })) {
      op.vary_lo.clear();
      op.vary_span.clear();
    }
    plan.ops.push_back(std::move(op));
  }
  if (scaled) plan.loaded = &sorted_loaded;
  return plan;
}

const std::vector<std::string>& PassKeys(const ReplayPlan& plan, const ReplayOp& op,
                                         uint64_t op_index, uint64_t loop,
                                         std::vector<std::string>* scratch) {
  if (loop == 0 || op.vary_span.empty() || plan.loaded == nullptr) return op.keys;
  *scratch = op.keys;
  for (size_t j = 0; j < op.keys.size(); ++j) {
    if (op.vary_span[j] == 0) continue;
    // splitmix64 of (pass, call, key): the same replacement in every run of this pass.
    uint64_t z = loop * 0x9e3779b97f4a7c15ull + op_index * 0xbf58476d1ce4e5b9ull + j + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::string k = EncodeKey((*plan.loaded)[op.vary_lo[j] + z % op.vary_span[j]]);
    if (op.keys[j].size() == 9 && op.keys[j].back() == '\0') {
      k.push_back('\0');  // an absent key stays absent: a new one per pass
      k += EncodeKey(loop);
    }
    (*scratch)[j] = std::move(k);
  }
  return *scratch;
}

uint64_t TraceShape::Place(std::string_view key) const {
  if (!has_sketch()) return trace::KeyProjection(key, prefix);
  const size_t cells = sketch_counts.size();
  const uint64_t width = cell_bits == 0 ? 0 : uint64_t{1} << (64 - cell_bits);
  // The cell: the last whose lower bound is at most the key (the first for keys before it).
  const auto upper = std::upper_bound(
      sketch_bounds.begin(), sketch_bounds.begin() + static_cast<std::ptrdiff_t>(cells), key,
      [](std::string_view k, const std::string& b) { return k < std::string_view(b); });
  if (upper == sketch_bounds.begin()) return 0;
  const size_t i = static_cast<size_t>(upper - sketch_bounds.begin()) - 1;
  const std::string& lo = sketch_bounds[i];
  const std::string& hi = sketch_bounds[i + 1];
  const bool last = i + 1 == cells;
  const size_t p = trace::SharedPrefix(lo, hi);
  const uint64_t a = trace::KeyProjection(lo, p);
  uint64_t b = trace::KeyProjection(hi, p);
  if (last && b < UINT64_MAX) ++b;  // the last cell holds its upper bound
  long double f = 0;
  if (last && std::string_view(hi) < key) {
    f = 1;  // after the last key
  } else if (b > a) {
    const uint64_t x = std::clamp(trace::KeyProjection(key, p), a, b);
    f = static_cast<long double>(x - a) / static_cast<long double>(b - a);
  }
  const uint64_t base = width == 0 ? 0 : width * i;
  const uint64_t span = width == 0 ? UINT64_MAX : width - 1;  // one cell: all of the space
  return base + std::min<uint64_t>(span, static_cast<uint64_t>(f * static_cast<long double>(span)));
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
  TraceShape shape;
  const trace::KeySketch* sketch = reader->sketch();
  if (sketch != nullptr && !sketch->counts.empty() && sketch->Entries() > 0) {
    shape.sketch_bounds = sketch->bounds;
    shape.sketch_counts = sketch->counts;
    shape.sketch_keys = sketch->Entries();
    while ((uint64_t{1} << shape.cell_bits) < sketch->counts.size()) ++shape.cell_bits;
  } else if (keys.empty()) {
    return Status::InvalidArgument("trace:" + path + ": names no keys");
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // The first and last keys share what every key in between shares.
  if (!keys.empty()) shape.prefix = trace::SharedPrefix(keys.front(), keys.back());
  shape.points.reserve(keys.size());
  for (const std::string& k : keys) shape.points.push_back(shape.Place(k));
  // Sorted keys place in order.
  shape.points.erase(std::unique(shape.points.begin(), shape.points.end()), shape.points.end());
  return shape;
}

}  // namespace grove::bench
