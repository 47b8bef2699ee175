#include "grovectl/advise.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "grovectl/progress.h"
#include <nlohmann/json.hpp>

namespace grove::grovectl {
namespace {

using nlohmann::json;

std::string Num(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// 1234567 -> "1,234,567".
std::string Grouped(double v) {
  std::string s = Num(std::round(v), 0);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string Pad(const std::string& s, size_t width, bool right) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// "4 ±3%": how many slices measured the candidate and how far apart their rates lay.
std::string Slices(const bench::CandidateResult& c) {
  const size_t n = c.slice_ops_per_sec.size();
  if (n < 2) return std::to_string(n);
  return std::to_string(n) + " ±" + Num(c.SliceSpread() * 50, 0) + "%";
}

json CandidateJson(const bench::CandidateResult& c, size_t rank) {
  json j{{"rank", rank},
         {"target", c.target},
         {"variant", c.variant},
         {"params", c.params},
         {"ok", c.status.ok()}};
  if (!c.status.ok()) {
    j["error"] = c.status.ToString();
    return j;
  }
  j["calls"] = c.ops;
  j["calls_per_sec"] = std::round(c.ops_per_sec * 10) / 10;
  j["p50_us"] = c.p50_us;
  j["p99_us"] = c.p99_us;
  j["page_reads_per_call"] = c.page_reads_per_op;
  j["bytes_written_per_call"] = c.bytes_written_per_op;
  j["cpu_us_per_call"] = c.cpu_us_per_op;
  j["index_memory_bytes"] = c.index_memory_bytes;
  j["load_seconds"] = c.load_seconds;
  j["replay_seconds"] = c.replay_seconds;
  j["warmup_seconds"] = c.warmup_seconds;
  j["loops"] = c.loops;
  j["slice_calls_per_sec"] = c.slice_ops_per_sec;
  j["slice_spread"] = c.SliceSpread();
  return j;
}

void PrintText(const bench::AdvisorOptions& o, const bench::Advice& a, std::ostream& out) {
  const bench::ReplayFacts& r = a.replay;
  out << "trace " << r.file << ": " << Grouped(static_cast<double>(r.calls)) << " calls replayed ("
      << r.skipped << " failed ones skipped; sampled at " << Num(r.sample_ppm / 1e4, 4)
      << "%), keys " << r.keys << "\n";
  out << "data: " << Grouped(static_cast<double>(a.records)) << " records "
      << (!o.backup.empty()       ? "from backup " + o.backup
          : r.keys == "projected" ? std::string("synthesised in the traced database's shape (its "
                                                "key sketch)")
                                  : std::string("synthesised from the trace's keys"))
      << "; memory " << HumanBytes(o.memory_bytes) << " per candidate; " << o.threads
      << " threads; wal.sync " << o.wal_sync << "\n"
      << (a.interleaved ? "measured in slices taken in turns, every candidate open at once"
                        : "measured one after another")
      << "\n\n";

  const std::vector<std::string> head = {
      "rank",       "candidate",        "calls/s",     "p50 us",       "p99 us",
      "reads/call", "KiB written/call", "CPU us/call", "index memory", "slices"};
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < a.ranked.size(); ++i) {
    const bench::CandidateResult& c = a.ranked[i];
    if (!c.status.ok()) {
      rows.push_back({"-", c.target, "failed: " + c.status.ToString()});
      continue;
    }
    rows.push_back({std::to_string(i + 1), c.target, Grouped(c.ops_per_sec), Num(c.p50_us, 1),
                    Num(c.p99_us, 1), Num(c.page_reads_per_op, 3),
                    Num(c.bytes_written_per_op / 1024, 2), Num(c.cpu_us_per_op, 1),
                    HumanBytes(static_cast<uint64_t>(c.index_memory_bytes)), Slices(c)});
  }
  std::vector<size_t> width(head.size());
  for (size_t k = 0; k < head.size(); ++k) width[k] = head[k].size();
  for (const auto& row : rows) {
    if (row.size() != head.size()) continue;
    for (size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    for (size_t k = 0; k < row.size(); ++k) {
      out << (k ? "  " : "") << Pad(row[k], width[k], k >= 2 && row.size() == head.size());
    }
    out << "\n";
  };
  line(head);
  for (const auto& row : rows) line(row);

  // A bar per candidate: the plot of the ranking.
  double best = 0;
  size_t name_width = 0;
  for (const auto& c : a.ranked) {
    if (!c.status.ok()) continue;
    best = std::max(best, c.ops_per_sec);
    name_width = std::max(name_width, c.target.size());
  }
  out << "\ncalls/s, relative to the best\n";
  for (const auto& c : a.ranked) {
    if (!c.status.ok() || best <= 0) continue;
    const double f = c.ops_per_sec / best;
    out << "  " << Pad(c.target, name_width, false) << "  "
        << std::string(static_cast<size_t>(std::lround(f * 40)), '#') << " " << Num(f, 2) << "\n";
  }
  out << "\nwhy: " << a.why << "\n\nrecommended index block for the server's configuration:\n"
      << a.config << "\nthe advice took " << Num(a.seconds, 1) << " s\n";
}

}  // namespace

int RunAdvise(const bench::AdvisorOptions& options, Output output, std::ostream& out,
              std::ostream& err) {
  StatusOr<bench::Advice> advice =
      bench::Advise(options, [&](const std::string& line) { err << "advise: " << line << "\n"; });
  if (!advice.ok()) {
    err << "grovectl: advise: " << advice.status().ToString() << "\n";
    return advice.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  if (output == Output::kJson) {
    json j;
    j["trace"] = json{{"file", advice->replay.file},
                      {"calls", advice->replay.calls},
                      {"skipped", advice->replay.skipped},
                      {"sample", advice->replay.sample_ppm / 1e6},
                      {"keys", advice->replay.keys}};
    j["records"] = advice->records;
    j["data"] = options.backup.empty() ? "synthesised" : "backup";
    j["memory_bytes"] = options.memory_bytes;
    j["threads"] = options.threads;
    j["wal_sync"] = options.wal_sync;
    j["interleaved"] = advice->interleaved;
    json cands = json::array();
    for (size_t i = 0; i < advice->ranked.size(); ++i) {
      cands.push_back(CandidateJson(advice->ranked[i], i + 1));
    }
    j["candidates"] = cands;
    j["recommended"] = advice->ranked.front().target;
    j["why"] = advice->why;
    j["config"] = advice->config;
    j["seconds"] = advice->seconds;
    out << Dump(j) << "\n";
  } else {
    PrintText(options, *advice, out);
  }
  return kExitOk;
}

}  // namespace grove::grovectl
