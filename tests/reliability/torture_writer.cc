#include "reliability/torture_writer.h"

#include <set>

#include "reliability/tagged_value.h"
#include "util/coding.h"

namespace grove::testing {
namespace {

constexpr size_t kExamples = 20;

std::string KeyName(uint32_t writer, const std::string& key) {
  return "writer " + std::to_string(writer) + " key " +
         std::to_string(DecodeBigEndian64(key.data()) & 0xffffffffu);
}

}  // namespace

std::string TortureKey(uint32_t writer, uint64_t i) {
  return EncodeU64Key((uint64_t{writer} + 1) << 32 | i);
}

void Violations::Add(Verdict v, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[v];
  if (examples_.size() < kExamples) examples_.push_back(std::string(VerdictName(v)) + ": " + what);
}

uint64_t Violations::count(Verdict v) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(v);
  return it == counts_.end() ? 0 : it->second;
}

uint64_t Violations::total() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [v, c] : counts_) n += c;
  return n;
}

std::vector<std::string> Violations::examples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return examples_;
}

bool Gate::Park() {
  std::unique_lock<std::mutex> lock(mu_);
  if (state_ == State::kRunning) return true;
  if (state_ == State::kStopped) return false;
  ++parked_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return state_ != State::kPaused; });
  --parked_;
  return state_ == State::kRunning;
}

void Gate::Pause() {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = State::kPaused;
}

bool Gate::WaitAllParked(std::chrono::seconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return parked_ == writers_; });
}

void Gate::Resume() {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = State::kRunning;
  acks_ = 0;
  cv_.notify_all();
}

void Gate::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = State::kStopped;
  cv_.notify_all();
}

void Gate::CountAck() {
  std::lock_guard<std::mutex> lock(mu_);
  ++acks_;
  cv_.notify_all();
}

bool Gate::WaitAcks(uint64_t n, std::chrono::seconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return acks_ >= n; });
}

TortureWriter::TortureWriter(uint32_t id, uint64_t keys, uint64_t seed, Gate* gate,
                             Violations* violations, WriterStats* stats)
    : id_(id),
      keys_(keys),
      gate_(gate),
      violations_(violations),
      stats_(stats),
      rng_(seed),
      ledger_(id) {}

void TortureWriter::Run() {
  while (gate_->Park()) Step();
}

uint64_t TortureWriter::RandomIndex() {
  // A tenth of the keys get half of the traffic: hot keys see many overwrites, so a lost write
  // would surface as an older version rather than as a missing key.
  return rng_() % 2 == 0 ? rng_() % (keys_ / 10) : rng_() % keys_;
}

size_t TortureWriter::RandomValueLength() {
  const int r = static_cast<int>(rng_() % 100);
  if (r < 85) return 40 + rng_() % 160;
  if (r < 95) return 200 + rng_() % 800;
  return 1100 + rng_() % 2000;  // stored out of line, in the value store
}

void TortureWriter::Step() {
  const int r = static_cast<int>(rng_() % 100);
  if (r < 45) return Put();
  if (r < 55) return Delete();
  if (r < 70) return Batch();
  if (r < 88) return Get();
  if (r < 95) return BatchGet();
  return Scan();
}

void TortureWriter::Finish(const Writes& writes, const grpc::Status& s) {
  if (s.ok()) {
    ledger_.Acknowledge(writes);
    stats_->acked.fetch_add(1);
    gate_->CountAck();
    return;
  }
  ledger_.Fail(writes);
  stats_->failed.fetch_add(1);
  std::lock_guard<std::mutex> lock(stats_->mu);
  ++stats_->failure_codes[std::to_string(s.error_code())];
}

void TortureWriter::CheckRead(const std::string& key, const std::optional<std::string>& value) {
  std::string why;
  const Verdict v = ledger_.Check(key, value, &why);
  stats_->reads_checked.fetch_add(1);
  if (v != Verdict::kOk) violations_->Add(v, KeyName(id_, key) + " (read while running): " + why);
}

void TortureWriter::Put() {
  const uint64_t seq = ++seq_;
  const std::string key = TortureKey(id_, RandomIndex());
  const std::string value = MakeTaggedValue(key, id_, seq, RandomValueLength());
  const Writes w = {{key, {seq, true}}};
  ledger_.Invoke(w);
  stats_->invoked.fetch_add(1);
  Finish(w, client_->Put(key, value));
}

void TortureWriter::Delete() {
  const uint64_t seq = ++seq_;
  const std::string key = TortureKey(id_, RandomIndex());
  const Writes w = {{key, {seq, false}}};
  ledger_.Invoke(w);
  stats_->invoked.fetch_add(1);
  Finish(w, client_->Delete(key));
}

void TortureWriter::Batch() {
  const uint64_t seq = ++seq_;
  const size_t n = 2 + rng_() % 15;
  std::set<uint64_t> indexes;
  while (indexes.size() < n) indexes.insert(RandomIndex());
  Writes w;
  std::vector<client::Mutation> mutations;
  for (uint64_t i : indexes) {
    client::Mutation m;
    m.key = TortureKey(id_, i);
    const bool put = rng_() % 5 != 0;
    m.type = put ? client::Mutation::Type::kPut : client::Mutation::Type::kDelete;
    if (put) m.value = MakeTaggedValue(m.key, id_, seq, RandomValueLength());
    w.push_back({m.key, {seq, put}});
    mutations.push_back(std::move(m));
  }
  ledger_.Invoke(w);
  stats_->invoked.fetch_add(1);
  Finish(w, client_->BatchInsert(mutations));
}

void TortureWriter::Get() {
  const std::string key = TortureKey(id_, RandomIndex());
  std::string value;
  bool found = false;
  if (!client_->Get(key, &value, &found).ok()) {
    stats_->read_errors.fetch_add(1);
    return;
  }
  CheckRead(key, found ? std::optional<std::string>(value) : std::nullopt);
}

void TortureWriter::BatchGet() {
  std::vector<std::string> keys;
  for (int i = 0; i < 16; ++i) keys.push_back(TortureKey(id_, RandomIndex()));
  std::vector<std::optional<std::string>> values;
  if (!client_->BatchGet(keys, &values).ok()) {
    stats_->read_errors.fetch_add(1);
    return;
  }
  for (size_t i = 0; i < keys.size(); ++i) CheckRead(keys[i], values[i]);
}

void TortureWriter::Scan() {
  // A window of this writer's keys, either direction: every key in it must read as the ledger
  // allows, including the keys the scan skipped (they must be allowed to be absent).
  const uint64_t first = rng_() % keys_;
  client::ScanRange range;
  range.start = TortureKey(id_, first);
  range.end = TortureKey(id_, keys_);
  range.limit = 100;
  range.page_size = 40;
  range.reverse = rng_() % 3 == 0;
  std::vector<std::pair<std::string, std::string>> got;
  const grpc::Status s = client_->Scan(range, [&](std::string_view k, std::string_view v) {
    got.emplace_back(std::string(k), std::string(v));
    return true;
  });
  if (!s.ok()) {
    stats_->read_errors.fetch_add(1);
    return;
  }
  for (size_t i = 1; i < got.size(); ++i) {
    if (range.reverse ? !(got[i].first < got[i - 1].first) : !(got[i - 1].first < got[i].first)) {
      violations_->Add(Verdict::kCorrupt, KeyName(id_, got[i].first) + ": scan out of order");
      return;
    }
  }
  // The window the scan covered: [first, last seen] forward, [last seen, end) in reverse.
  const auto index_of = [](const std::string& k) {
    return DecodeBigEndian64(k.data()) & 0xffffffffu;
  };
  uint64_t lo = first, hi = keys_ - 1;
  if (!range.reverse && got.size() == range.limit) hi = index_of(got.back().first);
  if (range.reverse && got.size() == range.limit) lo = index_of(got.back().first);
  std::map<std::string, std::string> seen(got.begin(), got.end());
  for (uint64_t i = lo; i <= hi; ++i) {
    const std::string key = TortureKey(id_, i);
    auto it = seen.find(key);
    CheckRead(key, it == seen.end() ? std::nullopt : std::optional<std::string>(it->second));
  }
}

}  // namespace grove::testing
