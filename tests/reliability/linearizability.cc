#include "reliability/linearizability.h"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace grove::testing {
namespace {

constexpr int kAbsent = -1;
constexpr int kNeverWritten = -2;

// One call or return event in the doubly linked list WGL walks and edits.
struct Entry {
  int op = -1;  // -1: the sentinel head
  bool is_call = false;
  int64_t time = 0;
  Entry* match = nullptr;  // call <-> return; null for the call of an unknown-outcome write
  Entry* prev = nullptr;
  Entry* next = nullptr;
};

struct CacheKey {
  std::vector<uint64_t> bits;
  int state;
  bool operator==(const CacheKey& o) const { return state == o.state && bits == o.bits; }
};
struct CacheHash {
  size_t operator()(const CacheKey& k) const {
    uint64_t h = static_cast<uint64_t>(k.state) * 0x9e3779b97f4a7c15ull;
    for (uint64_t w : k.bits) h = (h ^ w) * 0x100000001b3ull + (h >> 29);
    return static_cast<size_t>(h);
  }
};

void Lift(Entry* call) {
  call->prev->next = call->next;
  if (call->next) call->next->prev = call->prev;
  if (Entry* ret = call->match) {
    ret->prev->next = ret->next;
    if (ret->next) ret->next->prev = ret->prev;
  }
}

void Unlift(Entry* call) {
  if (Entry* ret = call->match) {
    ret->prev->next = ret;
    if (ret->next) ret->next->prev = ret;
  }
  call->prev->next = call;
  if (call->next) call->next->prev = call;
}

std::string Describe(const RegisterOp& op, int id, int value_id) {
  std::string s = "op " + std::to_string(id) + " (client " + std::to_string(op.client) + ", " +
                  (op.kind == RegisterOp::Kind::kWrite ? "write "
                   : op.kind == RegisterOp::Kind::kCas ? "compare-and-set to "
                                                       : "read ");
  s += !op.value                   ? std::string("absent")
       : value_id == kNeverWritten ? "a value never written"
                                   : "value #" + std::to_string(value_id);
  s += ", [" + std::to_string(op.invoke) + ", " +
       (op.known ? std::to_string(op.complete) : std::string("?")) + "])";
  return s;
}

}  // namespace

LinearizabilityResult CheckRegisterHistory(const std::vector<RegisterOp>& ops,
                                           const std::optional<std::string>& initial,
                                           uint64_t max_states) {
  LinearizabilityResult result;
  const int n = static_cast<int>(ops.size());
  // Values as small integers; a read of a value nobody wrote can never be placed.
  std::map<std::string, int> ids;
  for (const RegisterOp& op : ops) {
    if (op.kind != RegisterOp::Kind::kRead && op.value) ids.emplace(*op.value, ids.size());
  }
  if (initial) ids.emplace(*initial, ids.size());
  auto id_of = [&](const std::optional<std::string>& v) {
    if (!v) return kAbsent;
    auto it = ids.find(*v);
    return it == ids.end() ? kNeverWritten : it->second;
  };
  std::vector<int> value(n), expected(n);
  for (int i = 0; i < n; ++i) {
    value[i] = id_of(ops[i].value);
    expected[i] = id_of(ops[i].expected);
  }
  int state = id_of(initial);

  // The event list, by time; at equal times calls come first (the more permissive reading).
  std::vector<Entry> entries;
  entries.reserve(2 * n + 1);
  entries.push_back(Entry{});  // head
  for (int i = 0; i < n; ++i) {
    entries.push_back(Entry{i, true, ops[i].invoke});
    if (ops[i].known) entries.push_back(Entry{i, false, ops[i].complete});
  }
  std::sort(entries.begin() + 1, entries.end(), [](const Entry& a, const Entry& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.is_call && !b.is_call;
  });
  std::vector<Entry*> call_of(n, nullptr);
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].is_call) call_of[entries[i].op] = &entries[i];
  }
  for (size_t i = 1; i < entries.size(); ++i) {
    if (!entries[i].is_call) {
      entries[i].match = call_of[entries[i].op];
      call_of[entries[i].op]->match = &entries[i];
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    entries[i].prev = i > 0 ? &entries[i - 1] : nullptr;
    entries[i].next = i + 1 < entries.size() ? &entries[i + 1] : nullptr;
  }
  Entry* head = &entries[0];

  std::vector<uint64_t> linearized((n + 63) / 64, 0);
  std::unordered_set<CacheKey, CacheHash> cache;
  std::vector<std::pair<Entry*, int>> stack;  // (call linearized, state before it)
  size_t deepest = 0;
  int stuck_op = -1;

  Entry* entry = head->next;
  while (entry != nullptr) {
    if (entry->is_call) {
      const int i = entry->op;
      const RegisterOp::Kind kind = ops[i].kind;
      const bool write = kind != RegisterOp::Kind::kRead;
      const bool fits = kind == RegisterOp::Kind::kWrite ||
                        (kind == RegisterOp::Kind::kCas ? expected[i] == state : value[i] == state);
      if (fits) {
        const int next_state = write ? value[i] : state;
        linearized[i / 64] |= uint64_t{1} << (i % 64);
        if (cache.insert(CacheKey{linearized, next_state}).second) {
          if (++result.states_explored > max_states) {
            result.ok = false;
            result.gave_up = true;
            result.explanation = "gave up after " + std::to_string(max_states) + " states";
            return result;
          }
          stack.push_back({entry, state});
          state = next_state;
          Lift(entry);
          entry = head->next;
          continue;
        }
        linearized[i / 64] &= ~(uint64_t{1} << (i % 64));
      }
      entry = entry->next;
    } else {
      // A return whose operation could not be placed before it: undo the last choice.
      if (stack.size() >= deepest) {
        deepest = stack.size();
        stuck_op = entry->op;
      }
      if (stack.empty()) {
        result.ok = false;
        const RegisterOp& op = ops[stuck_op];
        result.explanation = Describe(op, stuck_op, value[stuck_op]) + " fits no order after " +
                             std::to_string(deepest) + " operations; overlapping it:";
        int shown = 0;
        for (int j = 0; j < n && shown < 8; ++j) {
          const bool overlaps =
              ops[j].invoke <= op.complete && (!ops[j].known || ops[j].complete >= op.invoke);
          if (j != stuck_op && overlaps) {
            result.explanation += " " + Describe(ops[j], j, value[j]) + ";";
            ++shown;
          }
        }
        return result;
      }
      auto [call, before] = stack.back();
      stack.pop_back();
      state = before;
      linearized[call->op / 64] &= ~(uint64_t{1} << (call->op % 64));
      Unlift(call);
      entry = call->next;
    }
  }
  return result;
}

}  // namespace grove::testing
