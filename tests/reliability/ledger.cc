#include "reliability/ledger.h"

#include <algorithm>

#include "reliability/tagged_value.h"

namespace grove::testing {
namespace {

std::string Describe(const KeyWrite& w) {
  return w.seq == 0  ? std::string("absent (never written)")
         : w.present ? "put #" + std::to_string(w.seq)
                     : "delete #" + std::to_string(w.seq);
}

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kLostAck:
      return "lost ack";
    case Verdict::kPhantom:
      return "phantom";
    case Verdict::kCorrupt:
      return "corrupt";
  }
  return "?";
}

void Ledger::Invoke(const std::vector<std::pair<std::string, KeyWrite>>& writes) {
  for (const auto& [key, w] : writes) keys_[key].invoked.push_back(w.seq);
}

void Ledger::Acknowledge(const std::vector<std::pair<std::string, KeyWrite>>& writes) {
  // Pending writes stay candidates: a call that timed out may still be queued in the server that
  // acknowledged this one. Only Resolve() can drop them.
  for (const auto& [key, w] : writes) keys_[key].baseline = w;
}

void Ledger::Fail(const std::vector<std::pair<std::string, KeyWrite>>& writes) {
  PendingBatch batch{writes.empty() ? 0 : writes.front().second.seq, {}};
  for (const auto& [key, w] : writes) {
    keys_[key].pending.push_back(w);
    if (w.present) batch.put_keys.push_back(key);
  }
  if (writes.size() > 1 && batch.put_keys.size() > 1) pending_batches_.push_back(batch);
}

Verdict Ledger::Check(const std::string& key, const std::optional<std::string>& observed,
                      std::string* why) const {
  static const KeyState kNever;
  auto it = keys_.find(key);
  const KeyState& st = it == keys_.end() ? kNever : it->second;
  auto expected = [&] {
    std::string s = "expected " + Describe(st.baseline);
    for (const KeyWrite& p : st.pending) s += " or (pending) " + Describe(p);
    return s;
  };
  if (!observed) {
    if (!st.baseline.present) return Verdict::kOk;
    for (const KeyWrite& p : st.pending) {
      if (!p.present) return Verdict::kOk;
    }
    *why = expected() + ", found the key absent";
    return Verdict::kLostAck;
  }
  ValueTag tag;
  const TagCheck c = CheckTaggedValue(key, *observed, &tag);
  if (c != TagCheck::kOk) {
    *why = expected() + ", found a " + TagCheckName(c) + " value of " +
           std::to_string(observed->size()) + " bytes";
    return Verdict::kCorrupt;
  }
  if (tag.writer != writer_) {
    *why = expected() + ", found a value of writer " + std::to_string(tag.writer);
    return Verdict::kPhantom;
  }
  if (st.baseline.present && st.baseline.seq == tag.seq) return Verdict::kOk;
  for (const KeyWrite& p : st.pending) {
    if (p.present && p.seq == tag.seq) return Verdict::kOk;
  }
  const bool invoked = std::binary_search(st.invoked.begin(), st.invoked.end(), tag.seq);
  *why = expected() + ", found put #" + std::to_string(tag.seq) +
         (invoked ? " (an older version)" : " (never invoked for this key)");
  return invoked ? Verdict::kLostAck : Verdict::kPhantom;
}

ResolveCounts Ledger::Resolve(const std::map<std::string, std::optional<std::string>>& observed) {
  ResolveCounts counts;
  // Which pending put each key shows, for the batch check below.
  std::map<std::string, uint64_t> shown_seq;
  for (auto& [key, st] : keys_) {
    auto o = observed.find(key);
    const std::optional<std::string> value = o == observed.end() ? std::nullopt : o->second;
    KeyWrite now;
    if (value) {
      ValueTag tag;
      CheckTaggedValue(key, *value, &tag);
      now = {tag.seq, true};
      shown_seq[key] = tag.seq;
    } else if (st.baseline.present) {
      // Absent although the baseline is a put: a pending delete was applied (Check made sure).
      for (const KeyWrite& p : st.pending) {
        if (!p.present) now = p;
      }
    } else {
      now = st.baseline;
    }
    if (!st.pending.empty()) {
      ++counts.keys_uncertain;
      const bool same =
          now.present == st.baseline.present && (!now.present || now.seq == st.baseline.seq);
      ++(same ? counts.resolved_old : counts.resolved_new);
    }
    st.baseline = now;
    st.pending.clear();
  }
  for (const PendingBatch& b : pending_batches_) {
    ++counts.batches_uncertain;
    size_t applied = 0, not_applied = 0;
    for (const std::string& key : b.put_keys) {
      auto s = shown_seq.find(key);
      const uint64_t seq = s == shown_seq.end() ? 0 : s->second;
      const std::vector<uint64_t>& inv = keys_[key].invoked;
      if (seq == b.seq) {
        ++applied;
      } else if (inv.empty() || inv.back() <= b.seq) {
        ++not_applied;  // nothing later touched the key, and the batch's put is not there
      }
      // Otherwise a later write covers the key; it says nothing about the batch.
    }
    if (applied > 0 && not_applied > 0) {
      ++counts.batches_torn;
    } else if (applied > 0) {
      ++counts.batches_applied;
    } else {
      ++counts.batches_dropped;
    }
  }
  pending_batches_.clear();
  return counts;
}

std::vector<std::string> Ledger::Keys() const {
  std::vector<std::string> out;
  out.reserve(keys_.size());
  for (const auto& [key, st] : keys_) out.push_back(key);
  return out;
}

}  // namespace grove::testing
