#include "cluster/raft/range_command.h"

#include <fmt/format.h>

#include "util/coding.h"

namespace grove::raft {
namespace {

constexpr uint8_t kVersion = 1;

}  // namespace

std::string EncodeRangeCommand(const RangeCommand& command) {
  std::string out;
  out.push_back(static_cast<char>(kVersion));
  out.push_back(static_cast<char>(command.kind));
  PutFixed64(&out, command.proposer);
  PutFixed64(&out, command.incarnation);
  PutFixed64(&out, command.sequence);
  if (command.kind == RangeCommand::Kind::kWrite) {
    PutLengthPrefixed(&out, command.batch.Encoded());
    PutVarint32(&out, static_cast<uint32_t>(command.conditions.size()));
    for (const WriteCondition& c : command.conditions) {
      out.push_back(static_cast<char>(c.kind));
      PutLengthPrefixed(&out, c.key);
      PutLengthPrefixed(&out, c.value);
      PutVarint64(&out, c.version);
    }
  } else if (command.kind == RangeCommand::Kind::kDeleteRange) {
    PutLengthPrefixed(&out, command.start);
    PutLengthPrefixed(&out, command.end);
    PutVarint64(&out, command.limit);
  } else {
    PutLengthPrefixed(&out, command.start);
    PutVarint64(&out, command.new_group);
  }
  return out;
}

StatusOr<RangeCommand> DecodeRangeCommand(Slice entry) {
  auto bad = [](const char* what) {
    return Status::DataLoss(fmt::format("range command: {}", what));
  };
  if (entry.size() < 2 + 24) return bad("too short");
  if (static_cast<uint8_t>(entry[0]) != kVersion) {
    return Status::DataLoss(
        fmt::format("range command: version {} is not 1", static_cast<int>(entry[0])));
  }
  RangeCommand c;
  c.kind = static_cast<RangeCommand::Kind>(entry[1]);
  Slice in = entry.substr(2);
  GetFixed64(&in, &c.proposer);
  GetFixed64(&in, &c.incarnation);
  GetFixed64(&in, &c.sequence);
  if (c.kind == RangeCommand::Kind::kWrite) {
    Slice batch;
    if (!GetLengthPrefixed(&in, &batch)) return bad("bad batch length");
    GROVE_ASSIGN_OR_RETURN(c.batch, WriteBatch::Decode(batch));
    if (c.batch.MarkCount() > 0 || c.batch.HasRangeDelete()) {
      return bad("a write carries marks or a range delete");
    }
    uint32_t n = 0;
    if (!GetVarint32(&in, &n) || n > in.size()) return bad("bad condition count");
    c.conditions.resize(n);
    for (WriteCondition& w : c.conditions) {
      Slice key, value;
      if (in.empty()) return bad("truncated condition");
      const auto kind = static_cast<uint8_t>(in[0]);
      in.remove_prefix(1);
      if (kind > static_cast<uint8_t>(WriteCondition::Kind::kVersionEquals)) {
        return bad("unknown condition kind");
      }
      w.kind = static_cast<WriteCondition::Kind>(kind);
      if (!GetLengthPrefixed(&in, &key) || !GetLengthPrefixed(&in, &value) ||
          !GetVarint64(&in, &w.version)) {
        return bad("truncated condition");
      }
      w.key.assign(key);
      w.value.assign(value);
    }
  } else if (c.kind == RangeCommand::Kind::kDeleteRange) {
    Slice start, end;
    if (!GetLengthPrefixed(&in, &start) || !GetLengthPrefixed(&in, &end) ||
        !GetVarint64(&in, &c.limit)) {
      return bad("truncated range delete");
    }
    c.start.assign(start);
    c.end.assign(end);
  } else if (c.kind == RangeCommand::Kind::kSplit) {
    Slice key;
    if (!GetLengthPrefixed(&in, &key) || !GetVarint64(&in, &c.new_group)) {
      return bad("truncated split");
    }
    if (key.empty() || c.new_group == 0) return bad("a split needs a key and a group");
    c.start.assign(key);
  } else {
    return Status::DataLoss(
        fmt::format("range command: unknown kind {}", static_cast<int>(c.kind)));
  }
  if (!in.empty()) return bad("trailing bytes");
  return c;
}

}  // namespace grove::raft
