// TreeLine bulk load: sorted input cut into segments as a reorganisation would cut it (segment.h),
// written straight to disk a window at a time, then the core's inner levels above them.

#include <fmt/format.h>

#include "grove/io_backend.h"

#include "index/treeline/treeline.h"
#include "page/extent_allocator.h"

namespace grove {

using treeline::BuiltSegment;
using treeline::DataPage;
using treeline::Record;
using treeline::Segment;

namespace {

// Records are built into segments this many bytes at a time; a window's last segment may come
// out short, one in a thousand pages or so.
constexpr size_t kWindowBytes = 4u << 20;

}  // namespace

Status TreeLine::BulkLoad(const BulkSource& source) {
  if (page_entries_.load() != 0 || segments_.load() != 1 || tree_->height() != 2 ||
      cache_.GetStats().entries != 0) {
    return Status::FailedPrecondition("bulk load needs an empty index");
  }
  if (ctx_.direct_writer == nullptr) return Status::Internal("bulk load without a page writer");

  std::vector<core::ChildRef> leaves;
  std::string prev_last;  // the last key of the segments written so far
  uint64_t pages_total = 0, single = 0;
  AlignedBuffer images;
  // Writes built[begin, end) (at most an extent's pages) as one run of pages.
  auto write_run = [&](std::vector<BuiltSegment>& built, size_t begin, size_t end) -> Status {
    uint64_t pages = 0;
    for (size_t k = begin; k < end; ++k) pages += built[k].segment.pages;
    if (images.size() < pages * kPageSize) images = AlignedBuffer(pages * kPageSize);
    GROVE_ASSIGN_OR_RETURN(const PageId first, ctx_.allocator->Allocate(pages));
    PageId next = first;
    for (size_t k = begin; k < end; ++k) {
      BuiltSegment& b = built[k];
      b.segment.first = next;
      for (int i = 0; i < b.segment.pages; ++i) {
        char* p = images.data() + (next - first + i) * kPageSize;
        page::Init(p, treeline::kDataPage, next + i);
        DataPage::Format(p, static_cast<uint16_t>(i), b.segment.pages, false);
        SlottedPage sp = DataPage(p).mutable_slots();
        for (const Record& r : b.pages[i]) sp.Insert(sp.count(), r.key, r.cell);
      }
      next += b.segment.pages;
      leaves.push_back(
          {leaves.empty() ? std::string() : core::ShortestSeparator(prev_last, b.first_key),
           b.segment.Encode()});
      for (auto it = b.pages.rbegin(); it != b.pages.rend(); ++it) {
        if (!it->empty()) {
          prev_last = it->back().key;
          break;
        }
      }
      single += b.segment.pages == 1 ? 1 : 0;
    }
    pages_total += pages;
    return ctx_.direct_writer->WriteRun(first, pages, images.data());
  };
  // Builds the window's segments and writes them in runs of at most an extent's pages.
  auto flush = [&](std::vector<Record> window) -> Status {
    std::vector<BuiltSegment> built =
        treeline::BuildSegments(std::move(window), BuildOptionsFor(1.0));
    size_t begin = 0;
    uint64_t run_pages = 0;
    for (size_t k = 0; k < built.size(); ++k) {
      if (run_pages + built[k].segment.pages > ExtentAllocator::kMaxExtentPages) {
        GROVE_RETURN_IF_ERROR(write_run(built, begin, k));
        begin = k;
        run_pages = 0;
      }
      run_pages += built[k].segment.pages;
    }
    return write_run(built, begin, built.size());
  };

  std::vector<Record> window;
  size_t window_bytes = 0;
  uint64_t n = 0;
  std::string key, cell;
  for (;;) {
    GROVE_ASSIGN_OR_RETURN(const bool more, source(&key, &cell));
    if (!more) break;
    const std::string& prev = window.empty() ? prev_last : window.back().key;
    if (n > 0 && !(prev < key)) {
      return Status::InvalidArgument(fmt::format("bulk load: key #{} is out of order", n));
    }
    window.push_back({key, cell});
    window_bytes += window.back().bytes();
    ++n;
    if (window_bytes >= kWindowBytes) {
      GROVE_RETURN_IF_ERROR(flush(std::move(window)));
      window.clear();
      window_bytes = 0;
    }
  }
  if (n == 0) return Status::Ok();
  if (!window.empty()) GROVE_RETURN_IF_ERROR(flush(std::move(window)));

  // The empty tree's one page goes once the new levels are in.
  Segment initial;
  {
    GROVE_ASSIGN_OR_RETURN(core::ParentLatch p, tree_->DescendToParent("", core::Seek::kAtOrAfter,
                                                                       IoCause::kBulkLoad, false));
    initial = Segment::Decode(core::InnerNodeView(p.data()).payload(0));
  }
  const uint64_t segments = leaves.size();
  GROVE_RETURN_IF_ERROR(tree_->BuildAbove(std::move(leaves), 0.9));
  pool_->Discard(initial.first);
  ctx_.allocator->Free(initial.first, 1);
  page_entries_ = n;
  segments_ = segments;
  segments_single_ = single;
  data_pages_ = pages_total;
  return Status::Ok();
}

}  // namespace grove
