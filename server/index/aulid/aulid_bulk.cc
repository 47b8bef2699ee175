// Aulid::BulkLoad (section 4.1): leaves packed to the fill factor and written straight to disk,
// then the runs, the key prefix and BuildMixedNode over one entry per run.

#include <chrono>

#include <fmt/format.h>

#include "index/aulid/aulid.h"
#include "index/aulid/prefix.h"
#include "index/core/tree.h"

namespace grove {

using core::Leaf;
using core::LeafView;

Status Aulid::BulkLoad(const BulkSource& source) {
  WriterLock lock(&inner_mu_);
  if (entries_.load() != 0 || leaf_pages_.load() != 1 || !inner_.empty()) {
    return Status::FailedPrecondition("bulk load needs an empty index");
  }
  if (ctx_.direct_writer == nullptr) return Status::Internal("bulk load without a page writer");
  const auto start = std::chrono::steady_clock::now();
  const size_t target = static_cast<size_t>(
      cfg_.fill * (kPageSize - core::kLeafSlotBase - SlottedPageView::kRegionHeader));

  std::vector<PageId> ids;
  std::vector<aulid::LeafKeys> leaves;  // each leaf's first and last key
  uint64_t entries = 0;
  {
    core::RunWriter run(ctx_);
    std::string key, cell;
    char* leaf = nullptr;
    for (;;) {
      GROVE_ASSIGN_OR_RETURN(const bool more, source(&key, &cell));
      if (!more) break;
      GROVE_RETURN_IF_ERROR(CheckBulkEntry(entries,
                                           entries > 0 ? Slice(leaves.back().max) : Slice(), key,
                                           cell.size(), max_key_, max_cell_));
      const size_t need = SlottedPageView::CellBytes(key.size(), cell.size());
      if (leaf == nullptr ||
          (LeafView(leaf).used_bytes() + need > target && LeafView(leaf).count() > 0) ||
          LeafView(leaf).free_bytes() < need) {
        GROVE_ASSIGN_OR_RETURN(auto next, run.Next());
        page::Init(next.second, core::kLeafPage, next.first);
        Leaf::Format(next.second);
        if (leaf != nullptr) {
          Leaf(leaf).set_right(next.first);
          Leaf(next.second).set_left(ids.back());
        }
        leaf = next.second;
        ids.push_back(next.first);
        leaves.push_back({key, key});
      }
      SlottedPage sp = Leaf(leaf).mutable_slots();
      sp.Insert(sp.count(), key, cell);
      leaves.back().max = key;
      ++entries;
    }
    GROVE_RETURN_IF_ERROR(run.Finish());
  }
  if (leaves.empty()) return Status::Ok();

  // The key prefix: the one every key shares (the first and last key's common prefix), so that
  // the 8 projected bytes are the ones that tell keys apart, unless another makes lookups walk
  // fewer leaves (clustered keys: prefix.h).
  prefix_ = aulid::ChoosePrefix(leaves, aulid::CommonPrefix(leaves.front().min, leaves.back().max));

  // Runs: a boundary between two leaves whose keys project apart starts a new run; the leaves
  // before the others are flagged, rewritten in place (the bulk-loaded pages are in no durable
  // checkpoint yet).
  std::vector<aulid::Entry> inner;
  PageId run_start = ids[0];
  AlignedBuffer img(kPageSize);
  for (size_t i = 0; i + 1 < leaves.size(); ++i) {
    if (aulid::ProjectsApart(leaves[i], leaves[i + 1], prefix_)) {
      inner.push_back({Proj(leaves[i].max), run_start});
      run_start = ids[i + 1];
      continue;
    }
    GROVE_RETURN_IF_ERROR(pool_->ReadCopy(ids[i], img.data(), IoCause::kBulkLoad));
    Leaf(img.data()).set_flags(kRunContinues);
    GROVE_RETURN_IF_ERROR(ctx_.direct_writer->WriteRun(ids[i], 1, img.data()));
  }

  // The empty leaf of Create goes; the inner part is built over the runs.
  ctx_.allocator->Free(tail_, 1);
  pool_->Discard(tail_);
  tail_ = run_start;
  last_ = ids.back();
  aulid::ImageSink sink;
  GROVE_RETURN_IF_ERROR(inner_.Build(inner, &sink));
  GROVE_RETURN_IF_ERROR(sink.Flush(ctx_.direct_writer));
  if (!inner.empty()) last_entry_ = inner.back().key;
  entries_ = entries;
  leaf_pages_ = leaves.size();
  GROVE_ASSIGN_OR_RETURN(shape_, inner_.Measure());
  bulk_load_ms_ = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::steady_clock::now() - start)
                                            .count());
  return Status::Ok();
}

}  // namespace grove
