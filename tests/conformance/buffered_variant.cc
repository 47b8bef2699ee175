#include "conformance/buffered_variant.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "engine/value_cell.h"
#include "index/btree/btree.h"
#include "util/coding.h"
#include "util/mutex.h"

namespace grove::testing {
namespace {

constexpr uint64_t kPagesPerEntry = 10;  // the btree's 2 per operation + 8 for inner levels

std::string SideFile(const std::string& dir, uint64_t epoch) {
  return fmt::format("{}/buffered-{}", dir, epoch);
}

class BufferedIndex final : public Index {
 public:
  BufferedIndex(const IndexContext& ctx, std::unique_ptr<Index> inner, uint64_t limit,
                uint64_t interval_ms, uint64_t flushes)
      : ctx_(ctx),
        inner_(std::move(inner)),
        limit_(limit),
        interval_ms_(interval_ms),
        flushes_(flushes) {
    flusher_ = std::thread([this] { FlushLoop(); });
  }
  ~BufferedIndex() override { Shutdown(); }

  StatusOr<bool> Get(Slice key, std::string* cell) override {
    {
      MutexLock lock(&mu_);
      auto it = buffer_.find(std::string(key));
      if (it != buffer_.end()) {
        if (!it->second.cell) return false;
        *cell = *it->second.cell;
        return true;
      }
    }
    return inner_->Get(key, cell);
  }

  uint64_t PagesDirtiedPerOp() const override { return 0; }

  Status Put(const WriteContext& w, Slice key, Slice cell,
             std::optional<std::string>* old_cell) override {
    return Buffer(w.lsn, key, std::string(cell), old_cell);
  }
  Status Delete(const WriteContext& w, Slice key, std::optional<std::string>* old_cell) override {
    return Buffer(w.lsn, key, std::nullopt, old_cell);
  }

  StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions& options) override;

  Status BulkLoad(const BulkSource& source) override {
    {
      MutexLock lock(&mu_);
      if (!buffer_.empty()) return Status::FailedPrecondition("bulk load needs an empty index");
    }
    return inner_->BulkLoad(source);
  }

  Status PrepareCheckpoint(uint64_t epoch) override {
    GROVE_RETURN_IF_ERROR(inner_->PrepareCheckpoint(epoch));
    GROVE_ASSIGN_OR_RETURN(
        auto f, ctx_.io->OpenFile(SideFile(ctx_.data_dir, epoch), FileOptions{.create = true}));
    std::string body;
    PutVarint64(&body, flushes_.load());
    GROVE_RETURN_IF_ERROR(f->Truncate(0));
    GROVE_RETURN_IF_ERROR(f->Write(0, body));
    GROVE_RETURN_IF_ERROR(f->Sync());
    GROVE_RETURN_IF_ERROR(ctx_.io->SyncDir(ctx_.data_dir));
    pending_epoch_ = epoch;
    return Status::Ok();
  }
  std::string SerializeMetadata() override {
    std::string s;
    PutVarint64(&s, pending_epoch_);
    s += inner_->SerializeMetadata();
    return s;
  }
  Lsn OldestUnpersistedLsn() const override {
    MutexLock lock(&mu_);
    Lsn oldest = kMaxLsn;
    for (const auto& [k, e] : buffer_) oldest = std::min(oldest, e.lsn);
    return std::min(oldest, inner_->OldestUnpersistedLsn());
  }
  void ListMemoryOnlyCells(std::vector<std::string>* cells) override {
    MutexLock lock(&mu_);
    for (const auto& [k, e] : buffer_) {
      if (e.cell && IsBlobCell(*e.cell)) cells->push_back(*e.cell);
    }
  }
  void OnCheckpointDurable(uint64_t epoch) override {
    durable_epochs_.fetch_add(1);
    auto names = ctx_.io->ListDir(ctx_.data_dir);
    if (!names.ok()) return;
    for (const std::string& name : *names) {
      uint64_t e;
      if (ParseSideFile(name, &e) && e < epoch) {
        ctx_.io->DeleteFile(ctx_.data_dir + "/" + name).IgnoreError();
      }
    }
  }
  void OnCheckpointAbandoned(uint64_t epoch) override {
    abandoned_epochs_.fetch_add(1);
    ctx_.io->DeleteFile(SideFile(ctx_.data_dir, epoch)).IgnoreError();
  }

  void Shutdown() override {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    if (flusher_.joinable()) flusher_.join();
  }

  Status Verify(IndexVerifier* v) override;

  IndexStats GetStats() override {
    IndexStats s = inner_->GetStats();
    s.variant = "buffered";
    MutexLock lock(&mu_);
    s.extra["buffered_entries"] = static_cast<double>(buffer_.size());
    s.extra["flushes_total"] = static_cast<double>(flushes_.load());
    s.extra["blind_writes_total"] = static_cast<double>(blind_.load());
    s.extra["released_cells_total"] = static_cast<double>(released_.load());
    s.extra["extend_refusals_total"] = static_cast<double>(extend_refusals_.load());
    s.extra["durable_epochs_total"] = static_cast<double>(durable_epochs_.load());
    s.extra["abandoned_epochs_total"] = static_cast<double>(abandoned_epochs_.load());
    return s;
  }

  static bool ParseSideFile(const std::string& name, uint64_t* epoch) {
    constexpr std::string_view kPrefix = "buffered-";
    if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) {
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

 private:
  struct Entry {
    Lsn lsn;
    std::optional<std::string> cell;  // nullopt: a tombstone
  };
  friend class BufferedCursor;

  Status Buffer(Lsn lsn, Slice key, std::optional<std::string> cell,
                std::optional<std::string>* old_cell) {
    old_cell->reset();
    bool kick = false;
    {
      MutexLock lock(&mu_);
      auto [it, inserted] = buffer_.try_emplace(std::string(key));
      if (inserted) {
        blind_.fetch_add(1);  // what the btree holds for the key is released at flush
      } else {
        *old_cell = std::move(it->second.cell);
      }
      it->second = Entry{lsn, std::move(cell)};
      kick = buffer_.size() > limit_;
    }
    if (kick) stop_cv_.notify_all();
    return Status::Ok();
  }

  // One maintenance unit: moves buffered entries into the btree until the buffer is empty or the
  // room cannot be extended.
  Status FlushUnit(WriteRoom* room) {
    uint64_t used = 0;
    for (int moved = 0; moved < 512; ++moved) {
      MutexLock lock(&mu_);
      if (buffer_.empty()) return Status::Ok();
      if (room->reserved() < used + kPagesPerEntry) {
        if (!room->Extend(kPagesPerEntry).ok()) {
          extend_refusals_.fetch_add(1);
          return Status::Ok();  // the rest waits for the next unit
        }
      }
      used += kPagesPerEntry;
      auto it = buffer_.begin();
      const WriteContext w{it->second.lsn, room};
      std::optional<std::string> old;
      const Status s = it->second.cell ? inner_->Put(w, it->first, *it->second.cell, &old)
                                       : inner_->Delete(w, it->first, &old);
      if (!s.ok()) {
        // The btree plans its changes before it makes them: a failure changed nothing.
        return s;
      }
      if (old) {
        ctx_.services->ReleaseCell(*old);
        released_.fetch_add(1);
      }
      buffer_.erase(it);
      flushes_.fetch_add(1);
    }
    return Status::Ok();
  }

  void FlushLoop() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(stop_mu_);
        stop_cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_));
        if (stop_) return;
      }
      bool empty;
      {
        MutexLock lock(&mu_);
        empty = buffer_.empty();
      }
      if (empty) continue;
      // Errors (closing, fail-stopped, no room) leave the entries buffered for a later unit.
      ctx_.services
          ->RunMaintenance(kPagesPerEntry, [this](WriteRoom* room) { return FlushUnit(room); })
          .IgnoreError();
    }
  }

  const IndexContext ctx_;
  const std::unique_ptr<Index> inner_;
  const uint64_t limit_;
  const uint64_t interval_ms_;
  uint64_t pending_epoch_ = 0;  // checkpoint hooks only (writers paused)

  mutable Mutex mu_;
  std::map<std::string, Entry> buffer_ GROVE_GUARDED_BY(mu_);

  std::atomic<uint64_t> flushes_;
  std::atomic<uint64_t> blind_{0}, released_{0}, extend_refusals_{0};
  std::atomic<uint64_t> durable_epochs_{0}, abandoned_epochs_{0};

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread flusher_;
};

// Merges a copy of the buffer's entries in range with the btree's cursor; buffered entries win
// and tombstones hide the btree's.
class BufferedCursor final : public IndexCursor {
 public:
  BufferedCursor(std::vector<std::pair<std::string, std::optional<std::string>>> buffered,
                 std::unique_ptr<IndexCursor> inner, bool reverse)
      : buffered_(std::move(buffered)), inner_(std::move(inner)), reverse_(reverse) {
    Settle();
  }
  bool Valid() const override { return valid_; }
  Slice key() const override { return key_; }
  Slice cell() const override { return cell_; }
  Status status() const override { return inner_->status(); }
  void Next() override {
    if (from_buffer_) {
      ++pos_;
    } else {
      inner_->Next();
    }
    Settle();
  }

 private:
  bool Before(Slice a, Slice b) const { return reverse_ ? b < a : a < b; }
  // Positions on the next visible entry of the merge.
  void Settle() {
    for (;;) {
      if (!inner_->status().ok()) {  // an error ends the merge: nothing after it is trusted
        valid_ = false;
        return;
      }
      const bool have_b = pos_ < buffered_.size();
      const bool have_i = inner_->Valid();
      if (!have_b && !have_i) {
        valid_ = false;
        return;
      }
      if (have_b && (!have_i || !Before(inner_->key(), buffered_[pos_].first))) {
        if (have_i && inner_->key() == Slice(buffered_[pos_].first)) inner_->Next();
        if (!buffered_[pos_].second) {
          ++pos_;  // a tombstone
          continue;
        }
        from_buffer_ = true;
        key_ = buffered_[pos_].first;
        cell_ = *buffered_[pos_].second;
      } else {
        from_buffer_ = false;
        key_.assign(inner_->key());
        cell_.assign(inner_->cell());
      }
      valid_ = true;
      return;
    }
  }

  std::vector<std::pair<std::string, std::optional<std::string>>> buffered_;
  size_t pos_ = 0;
  std::unique_ptr<IndexCursor> inner_;
  const bool reverse_;
  bool valid_ = false, from_buffer_ = false;
  std::string key_, cell_;
};

StatusOr<std::unique_ptr<IndexCursor>> BufferedIndex::NewCursor(const CursorOptions& options) {
  std::vector<std::pair<std::string, std::optional<std::string>>> copy;
  {
    MutexLock lock(&mu_);
    for (auto it = buffer_.lower_bound(options.lower); it != buffer_.end(); ++it) {
      if (options.has_upper && it->first >= options.upper) break;
      copy.emplace_back(it->first, it->second.cell);
    }
  }
  if (options.reverse) std::reverse(copy.begin(), copy.end());
  GROVE_ASSIGN_OR_RETURN(auto inner, inner_->NewCursor(options));
  return std::unique_ptr<IndexCursor>(
      std::make_unique<BufferedCursor>(std::move(copy), std::move(inner), options.reverse));
}

Status BufferedIndex::Verify(IndexVerifier* v) {
  // Writers and maintenance are paused: the buffer and the btree stand still.
  class Shadowing final : public IndexVerifier {
   public:
    Shadowing(IndexVerifier* v, const std::map<std::string, Entry>* buffer)
        : v_(v), buffer_(buffer) {}
    void ClaimPages(PageId first, uint32_t count, std::string_view what) override {
      v_->ClaimPages(first, count, what);
    }
    void OnCell(Slice key, Slice cell) override {
      if (buffer_->count(std::string(key))) {
        v_->OnShadowedCell(key, cell);
      } else {
        v_->OnCell(key, cell);
      }
    }
    void OnShadowedCell(Slice key, Slice cell) override { v_->OnShadowedCell(key, cell); }
    void Problem(std::string description) override { v_->Problem(std::move(description)); }

   private:
    IndexVerifier* const v_;
    const std::map<std::string, Entry>* const buffer_;
  };
  MutexLock lock(&mu_);
  Shadowing shadowing(v, &buffer_);
  GROVE_RETURN_IF_ERROR(inner_->Verify(&shadowing));
  for (const auto& [k, e] : buffer_) {
    if (e.cell) v->OnCell(k, *e.cell);
  }
  return Status::Ok();
}

StatusOr<std::pair<uint64_t, uint64_t>> ParseParams(const ParamMap& params) {
  GROVE_ASSIGN_OR_RETURN(const uint64_t limit,
                         ParseUintParam(params, "buffer_entries", 1, 1000000));
  GROVE_ASSIGN_OR_RETURN(const uint64_t interval,
                         ParseUintParam(params, "flush_interval_ms", 1, 10000));
  return std::make_pair(limit, interval);
}

// The btree behind the buffer, with its default parameters.
struct Btree {
  VariantSpec spec = BTree::Spec();
  ParamMap params;
  Btree() {
    for (const ParamSpec& p : spec.params) params.emplace(p.name, p.default_value);
  }
};

}  // namespace

VariantSpec BufferedVariantSpec() {
  VariantSpec spec;
  spec.name = "buffered";
  spec.summary = "test variant: a btree behind a write buffer taking blind writes";
  spec.params = {{"buffer_entries", "64", false, "flush when the buffer holds more entries"},
                 {"flush_interval_ms", "2", false, "how often the flusher looks"}};
  spec.create = [](const IndexContext& ctx,
                   const ParamMap& params) -> StatusOr<std::unique_ptr<Index>> {
    GROVE_ASSIGN_OR_RETURN(const auto p, ParseParams(params));
    const Btree btree;
    GROVE_ASSIGN_OR_RETURN(std::unique_ptr<Index> inner, btree.spec.create(ctx, btree.params));
    return std::unique_ptr<Index>(
        std::make_unique<BufferedIndex>(ctx, std::move(inner), p.first, p.second, 0));
  };
  spec.open = [](const IndexContext& ctx, const ParamMap& params,
                 Slice metadata) -> StatusOr<std::unique_ptr<Index>> {
    GROVE_ASSIGN_OR_RETURN(const auto p, ParseParams(params));
    Slice in = metadata;
    uint64_t epoch;
    if (!GetVarint64(&in, &epoch)) return Status::DataLoss("buffered: malformed metadata");
    // The file the manifest names must be there: it was synced before the manifest was written
    // and is deleted only after a later checkpoint is durable.
    const std::string path = SideFile(ctx.data_dir, epoch);
    GROVE_ASSIGN_OR_RETURN(auto f, ctx.io->OpenFile(path, FileOptions{.read_only = true}));
    char buf[16];
    size_t n = 0;
    GROVE_RETURN_IF_ERROR(f->Read(0, sizeof(buf), buf, &n));
    Slice body(buf, n);
    uint64_t flushes;
    if (!GetVarint64(&body, &flushes) || !body.empty()) {
      return Status::DataLoss(fmt::format("buffered: {} is malformed", path));
    }
    const Btree btree;
    GROVE_ASSIGN_OR_RETURN(std::unique_ptr<Index> inner, btree.spec.open(ctx, btree.params, in));
    return std::unique_ptr<Index>(
        std::make_unique<BufferedIndex>(ctx, std::move(inner), p.first, p.second, flushes));
  };
  return spec;
}

}  // namespace grove::testing
