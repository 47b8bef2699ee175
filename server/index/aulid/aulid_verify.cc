// Aulid::Verify: the inner part's own checks, then the leaf chain against it: links both ways,
// keys ascending, every run starting where its entry says with keys inside its projection range,
// the tail, the last leaf and the counters.

#include <fmt/format.h>

#include "index/aulid/aulid.h"

namespace grove {

using core::LeafView;

Status Aulid::Verify(IndexVerifier* v) {
  WriterLock lock(&inner_mu_);
  std::vector<aulid::Entry> runs;
  GROVE_RETURN_IF_ERROR(inner_.Verify(v, [&](const aulid::Entry& e, uint32_t) {
    runs.push_back(e);
    return Status::Ok();
  }));
  auto problem = [&](std::string what) { v->Problem("aulid: " + std::move(what)); };
  if (!runs.empty() && runs.back().key != last_entry_) {
    problem(fmt::format("largest inner key {}, recorded {}", runs.back().key, last_entry_));
  }

  size_t run = 0;  // the run the current leaf is in; runs.size() is the tail
  PageId cur = runs.empty() ? tail_ : runs[0].leaf;
  PageId prev = kInvalidPageId;
  bool prev_continues = false;
  std::string last_key;
  bool have_key = false;
  uint64_t leaves = 0, entries = 0;
  while (cur != kInvalidPageId) {
    if (++leaves > leaf_pages_.load() + 1) {
      problem("the leaf chain is longer than the leaf count (a cycle?)");
      break;
    }
    v->ClaimPages(cur, 1, "aulid leaf");
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(cur, IoCause::kDemand));
    if (const std::string why = core::CheckLeaf(g.data(), core::Fences{}); !why.empty()) {
      problem(fmt::format("leaf {}: {}", cur, why));
      break;
    }
    const LeafView leaf(g.data());
    if (leaf.left() != prev) {
      problem(fmt::format("leaf {}: left link {}, expected {}", cur, leaf.left(), prev));
    }
    if (prev != kInvalidPageId && !prev_continues) {
      ++run;  // a new run starts here
      const PageId want = run < runs.size() ? runs[run].leaf : tail_;
      if (run > runs.size() || cur != want) {
        problem(fmt::format("leaf {} starts run {}, whose first leaf is {}", cur, run, want));
      }
    }
    for (int i = 0; i < leaf.count(); ++i) {
      const Slice k = leaf.key(i);
      if (have_key && !(Slice(last_key) < k)) {
        problem(fmt::format("leaf {} slot {}: keys not ascending along the chain", cur, i));
      }
      const uint64_t p = Proj(k);
      if ((run < runs.size() && p > runs[run].key) ||
          (run > 0 && run <= runs.size() && p <= runs[run - 1].key)) {
        problem(fmt::format("leaf {} slot {}: projection {} outside run {}", cur, i, p, run));
      }
      last_key.assign(k);
      have_key = true;
      v->OnCell(k, leaf.cell(i));
      ++entries;
    }
    prev_continues = (leaf.flags() & kRunContinues) != 0;
    prev = cur;
    cur = leaf.right();
  }
  if (prev != last_)
    problem(fmt::format("the chain ends at leaf {}, the last leaf is {}", prev, last_));
  if (run != runs.size()) {
    problem(
        fmt::format("the chain has {} runs, the inner part {} and the tail", run + 1, runs.size()));
  }
  if (prev_continues) problem("the last leaf is flagged as continuing its run");
  if (leaves != leaf_pages_.load()) {
    problem(fmt::format("{} leaves in the chain, {} counted", leaves, leaf_pages_.load()));
  }
  if (entries != entries_.load()) {
    problem(fmt::format("{} entries in the leaves, {} counted", entries, entries_.load()));
  }
  GROVE_ASSIGN_OR_RETURN(shape_, inner_.Measure());
  return Status::Ok();
}

}  // namespace grove
