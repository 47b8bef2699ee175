#include "grovectl/commands.h"

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include "grove/db.h"
#include "grove/logger.h"

#include <nlohmann/json.hpp>

namespace grove::grovectl {
namespace {

const char* CodeName(grpc::StatusCode code) {
  static constexpr const char* kNames[] = {"OK",
                                           "CANCELLED",
                                           "UNKNOWN",
                                           "INVALID_ARGUMENT",
                                           "DEADLINE_EXCEEDED",
                                           "NOT_FOUND",
                                           "ALREADY_EXISTS",
                                           "PERMISSION_DENIED",
                                           "RESOURCE_EXHAUSTED",
                                           "FAILED_PRECONDITION",
                                           "ABORTED",
                                           "OUT_OF_RANGE",
                                           "UNIMPLEMENTED",
                                           "INTERNAL",
                                           "UNAVAILABLE",
                                           "DATA_LOSS",
                                           "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? kNames[i] : "UNKNOWN";
}

// Decodes a command-line key; on failure prints the reason and returns false.
bool DecodeArg(const Context& ctx, client::Format format, const char* what, const std::string& text,
               std::string* bytes) {
  std::string why;
  if (client::Decode(format, text, bytes, &why)) return true;
  *ctx.err << "grovectl: " << what << ": " << why << "\n";
  return false;
}

}  // namespace

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool ParseDuration(const std::string& text, std::chrono::milliseconds* out, std::string* why) {
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    *why = "'" + text + "' is not a duration (e.g. 500ms, 30s, 10m, 2h, 7d)";
    return false;
  }
  const std::string unit = text.substr(used);
  double ms_per = 0;
  if (unit.empty() || unit == "s") {
    ms_per = 1000;
  } else if (unit == "ms") {
    ms_per = 1;
  } else if (unit == "m") {
    ms_per = 60e3;
  } else if (unit == "h") {
    ms_per = 3600e3;
  } else if (unit == "d") {
    ms_per = 86400e3;
  } else {
    *why = "'" + text + "': unknown unit '" + unit + "' (ms, s, m, h or d)";
    return false;
  }
  const double ms = number * ms_per;
  if (!(ms >= 0) || ms > 1e15) {
    *why = "'" + text + "' is negative or too long";
    return false;
  }
  *out = std::chrono::milliseconds(static_cast<int64_t>(ms + 0.5));
  return true;
}

bool ParseBytes(const std::string& text, uint64_t* out, std::string* why) {
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    *why = "'" + text + "' is not a size (e.g. 500KiB, 50MiB, 1GiB)";
    return false;
  }
  std::string unit = text.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  double scale = 0;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KiB" || unit == "KB") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "MiB" || unit == "MB") {
    scale = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GiB" || unit == "GB") {
    scale = 1024.0 * 1024 * 1024;
  } else {
    *why = "'" + text + "': unknown unit '" + unit + "' (B, KiB, MiB or GiB)";
    return false;
  }
  const double bytes = number * scale;
  if (!(bytes >= 0) || bytes > 1e18) {
    *why = "'" + text + "' is negative or too large";
    return false;
  }
  *out = static_cast<uint64_t>(bytes);
  return true;
}

int ReportRpcError(const Context& ctx, const grpc::Status& status) {
  *ctx.err << "grovectl: " << CodeName(status.error_code()) << ": " << status.error_message();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    *ctx.err << " (is groved running and reachable at " << ctx.client->options().address << "?)";
  }
  *ctx.err << "\n";
  return kExitFailed;
}

int RunGet(const Context& ctx, const std::string& key_text) {
  std::string key;
  if (!DecodeArg(ctx, ctx.key_format, "KEY", key_text, &key)) return kExitUsage;
  std::string value;
  bool found = false;
  client::ValueInfo info;
  grpc::Status s = ctx.client->Get(key, &value, &found, &info);
  if (!s.ok()) return ReportRpcError(ctx, s);
  if (ctx.output == Output::kJson) {
    nlohmann::json j = {{"key", client::Encode(ctx.key_format, key)}, {"found", found}};
    if (found) {
      j["value"] = client::Encode(ctx.value_format, value);
      j["version"] = info.version;
      if (info.expires_ms != 0) j["expires_at_ms"] = info.expires_ms;
    }
    *ctx.out << Dump(j) << "\n";
  } else if (found) {
    *ctx.out << client::Encode(ctx.value_format, value) << "\n";
  } else {
    *ctx.err << "grovectl: not found\n";
  }
  return found ? kExitOk : kExitNotFound;
}

int RunPut(const Context& ctx, const std::string& key_text, const std::string& value_text,
           const std::string& value_file, std::chrono::milliseconds ttl) {
  std::string key, value;
  if (!DecodeArg(ctx, ctx.key_format, "KEY", key_text, &key)) return kExitUsage;
  if (!value_file.empty()) {
    // The file holds the value's bytes as they are; no format applies.
    std::ostringstream buf;
    if (value_file == "-") {
      buf << ctx.in->rdbuf();
    } else {
      std::ifstream f(value_file, std::ios::binary);
      if (!f) {
        *ctx.err << "grovectl: --value-file: cannot read '" << value_file << "'\n";
        return kExitUsage;
      }
      buf << f.rdbuf();
    }
    value = buf.str();
  } else if (!DecodeArg(ctx, ctx.value_format, "VALUE", value_text, &value)) {
    return kExitUsage;
  }
  client::WriteOptions options;
  options.ttl = ttl;
  client::WriteOutcome outcome;
  grpc::Status s = ctx.client->Put(key, value, options, &outcome);
  if (!s.ok()) return ReportRpcError(ctx, s);
  if (ctx.output == Output::kJson) *ctx.out << Dump({{"version", outcome.version}}) << "\n";
  return kExitOk;
}

int RunCas(const Context& ctx, const CasArgs& args) {
  std::string key, value;
  if (!DecodeArg(ctx, ctx.key_format, "KEY", args.key, &key)) return kExitUsage;
  if (!DecodeArg(ctx, ctx.value_format, "NEW", args.new_value, &value)) return kExitUsage;
  client::Precondition p = client::Precondition::Absent();
  if (args.has_expect_value) {
    std::string expected;
    if (!DecodeArg(ctx, ctx.value_format, "--expect", args.expect_value, &expected)) {
      return kExitUsage;
    }
    p = client::Precondition::ValueEquals(std::move(expected));
  } else if (args.has_expect_version) {
    p = client::Precondition::VersionEquals(args.expect_version);
  }
  client::WriteOptions options;
  options.precondition = std::move(p);
  options.return_current = true;
  client::WriteOutcome outcome;
  grpc::Status s = ctx.client->Put(key, value, options, &outcome);
  const client::ConditionFailure& failure = outcome.failure;
  const uint64_t version = outcome.version;
  if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
    if (ctx.output == Output::kJson) {
      nlohmann::json j = {{"swapped", false}, {"found", failure.found}};
      if (failure.found) {
        j["version"] = failure.version;
        if (failure.has_value) j["value"] = client::Encode(ctx.value_format, failure.value);
      }
      *ctx.out << Dump(j) << "\n";
    }
    *ctx.err << "grovectl: not swapped: " << s.error_message() << "\n";
    return kExitPrecondition;
  }
  if (!s.ok()) return ReportRpcError(ctx, s);
  if (ctx.output == Output::kJson) {
    *ctx.out << Dump({{"swapped", true}, {"version", version}}) << "\n";
  }
  return kExitOk;
}

int RunDelete(const Context& ctx, const std::string& key_text) {
  std::string key;
  if (!DecodeArg(ctx, ctx.key_format, "KEY", key_text, &key)) return kExitUsage;
  grpc::Status s = ctx.client->Delete(key);
  return s.ok() ? kExitOk : ReportRpcError(ctx, s);
}

int RunDeleteRange(const Context& ctx, const DeleteRangeArgs& args) {
  std::string start, end;
  if (!args.start.empty() && !DecodeArg(ctx, ctx.key_format, "--start", args.start, &start)) {
    return kExitUsage;
  }
  if (!args.end.empty() && !DecodeArg(ctx, ctx.key_format, "--end", args.end, &end)) {
    return kExitUsage;
  }
  uint64_t deleted = 0, calls = 0;
  client::DeleteRangeOutcome r;
  // Each call is atomic; the next continues where the last stopped.
  do {
    grpc::Status s = ctx.client->DeleteRange(start, end, args.limit, &r);
    if (!s.ok()) {
      if (calls > 0) {
        *ctx.err << "grovectl: delete-range: " << deleted << " keys deleted in " << calls
                 << " calls before the error; continue with --start "
                 << client::Encode(ctx.key_format, start) << "\n";
      }
      return ReportRpcError(ctx, s);
    }
    deleted += r.deleted;
    ++calls;
    start = r.resume_key;
  } while (r.more && !args.once);
  if (ctx.output == Output::kJson) {
    nlohmann::json j = {{"deleted", deleted}, {"calls", calls}, {"more", r.more}};
    if (r.more) {
      j["resume_key"] = client::Encode(ctx.key_format, r.resume_key);
      j["limited_by"] = r.limited_by;
    }
    *ctx.out << Dump(j) << "\n";
  } else {
    *ctx.out << "deleted " << deleted << " keys in " << calls << (calls == 1 ? " call" : " calls");
    if (r.more) {
      *ctx.out << "; stopped at " << r.limited_by << ", continue with --start "
               << client::Encode(ctx.key_format, r.resume_key);
    }
    *ctx.out << "\n";
  }
  return kExitOk;
}

int RunScan(const Context& ctx, const ScanArgs& args) {
  client::ScanRange range;
  if (!args.start.empty() && !DecodeArg(ctx, ctx.key_format, "--start", args.start, &range.start)) {
    return kExitUsage;
  }
  if (!args.end.empty() && !DecodeArg(ctx, ctx.key_format, "--end", args.end, &range.end)) {
    return kExitUsage;
  }
  range.limit = args.limit;
  range.reverse = args.reverse;
  range.keys_only = args.keys_only;
  range.page_size = args.page_size;
  grpc::Status s = ctx.client->Scan(range, [&](std::string_view key, std::string_view value) {
    if (ctx.output == Output::kJson) {
      nlohmann::json j = {{"key", client::Encode(ctx.key_format, key)}};
      if (!args.keys_only) j["value"] = client::Encode(ctx.value_format, value);
      *ctx.out << Dump(j) << "\n";
    } else if (args.keys_only) {
      *ctx.out << client::Encode(ctx.key_format, key) << "\n";
    } else {
      *ctx.out << client::Encode(ctx.key_format, key) << "\t"
               << client::Encode(ctx.value_format, value) << "\n";
    }
    return static_cast<bool>(*ctx.out);  // stop when the reader went away (| head)
  });
  ctx.out->flush();
  return s.ok() ? kExitOk : ReportRpcError(ctx, s);
}

int RunStats(const Context& ctx) {
  v1::StatsResponse stats;
  grpc::Status s = ctx.client->Stats(&stats);
  if (!s.ok()) return ReportRpcError(ctx, s);
  if (ctx.output == Output::kJson) {
    std::string json;
    google::protobuf::util::JsonPrintOptions o;
    o.always_print_primitive_fields = true;
    o.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(stats, &json, o);
    *ctx.out << json << "\n";
    return kExitOk;
  }
  std::ostream& o = *ctx.out;
  const auto& c = stats.cache();
  const double lookups = static_cast<double>(c.hits() + c.misses());
  o << "groved " << stats.version() << ", up " << static_cast<uint64_t>(stats.uptime_seconds())
    << " s\n"
    << "variant            " << stats.variant() << "\n"
    << "io backend         " << stats.io_backend() << "\n"
    << "operations         gets " << stats.operations().gets() << ", puts "
    << stats.operations().puts() << ", deletes " << stats.operations().deletes() << ", batches "
    << stats.operations().writes() << ", scans " << stats.operations().scans() << "\n"
    << "index              height " << stats.index().height() << ", " << stats.index().leaf_pages()
    << " leaf pages, " << stats.index().inner_pages() << " inner pages ("
    << stats.index().inner_bytes() << " bytes), " << stats.index().entries() << " entries\n"
    << "cache              " << c.resident_pages() << "/" << c.capacity_pages()
    << " pages resident, " << c.dirty_pages() << " dirty, hit ratio "
    << (lookups > 0 ? static_cast<double>(c.hits()) / lookups : 0.0) << "\n"
    << "prefetch           issued " << c.prefetch_issued() << ", used " << c.prefetch_used()
    << ", wasted " << c.prefetch_wasted() << "\n"
    << "checksum failures  " << c.checksum_failures() << "\n"
    << "wal                " << stats.wal().records() << " records, " << stats.wal().bytes()
    << " bytes, " << stats.wal().syncs() << " syncs (p99 " << stats.wal().sync_p99_seconds()
    << " s)\n"
    << "checkpoints        " << stats.checkpoint().count() << " (epoch "
    << stats.checkpoint().epoch() << ", p99 " << stats.checkpoint().duration_p99_seconds()
    << " s)\n"
    << "data file          " << stats.storage().data_file_pages() << " pages, "
    << stats.storage().free_pages() << " free\n";
  return kExitOk;
}

int RunHealth(const Context& ctx, const std::string& service) {
  grpc::health::v1::HealthCheckResponse::ServingStatus status{};
  grpc::Status s = ctx.client->Health(service, &status);
  if (!s.ok()) return ReportRpcError(ctx, s);
  const std::string name = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(status);
  if (ctx.output == Output::kJson) {
    *ctx.out << Dump({{"service", service}, {"status", name}}) << "\n";
  } else {
    *ctx.out << name << "\n";
  }
  return status == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk : kExitFailed;
}

int RunBackup(const Context& ctx, const BackupArgs& args) {
  v1::BackupResponse r;
  grpc::Status s = ctx.client->Backup(args.name, args.max_bytes_per_second, args.wait, &r);
  if (!s.ok()) return ReportRpcError(ctx, s);
  if (ctx.output == Output::kJson) {
    *ctx.out << Dump({{"path", r.path()},
                      {"checkpoint_epoch", r.checkpoint_epoch()},
                      {"last_lsn", r.last_lsn()},
                      {"data_bytes", r.data_bytes()},
                      {"wal_bytes", r.wal_bytes()},
                      {"pages_preserved", r.pages_preserved()},
                      {"seconds", r.seconds()}})
             << "\n";
  } else {
    *ctx.out << "backup written to " << r.path() << " (on the server): checkpoint "
             << r.checkpoint_epoch() << ", log up to LSN " << r.last_lsn() << ", "
             << (r.data_bytes() + r.wal_bytes()) / (1 << 20) << " MiB in "
             << static_cast<uint64_t>(r.seconds() * 1000) << " ms\n";
  }
  return kExitOk;
}

int RunVerify(const Context& ctx, const VerifyArgs& args) {
  v1::VerifyResponse r;
  grpc::Status s = ctx.client->Verify(args.pause_writers, args.cache_bytes, args.wait, &r);
  if (!s.ok()) return ReportRpcError(ctx, s);
  if (ctx.output == Output::kJson) {
    nlohmann::json problems = nlohmann::json::array();
    for (const std::string& p : r.problems()) problems.push_back(p);
    *ctx.out << Dump({{"pages_checked", r.pages_checked()},
                      {"entries_checked", r.entries_checked()},
                      {"blob_values_checked", r.blob_values_checked()},
                      {"problems", problems},
                      {"checkpoint_epoch", r.checkpoint_epoch()},
                      {"pages_preserved", r.pages_preserved()},
                      {"writers_paused", r.writers_paused()},
                      {"seconds", r.seconds()}})
             << "\n";
  } else {
    std::ostringstream line;
    line << std::fixed << std::setprecision(1);
    if (r.writers_paused()) {
      line << "verified the live database (writers paused)";
    } else {
      line << "verified checkpoint " << r.checkpoint_epoch() << " online (" << r.pages_preserved()
           << " pages copied ahead of writes)";
    }
    line << ": " << r.pages_checked() << " pages, " << r.entries_checked() << " entries, "
         << r.blob_values_checked() << " large values in " << r.seconds() << " s; "
         << (r.problems().empty() ? "no problems" : std::to_string(r.problems_size()) + " problems")
         << "\n";
    *ctx.out << line.str();
    for (const std::string& p : r.problems()) *ctx.out << "  " << p << "\n";
  }
  return r.problems().empty() ? kExitOk : kExitFailed;
}

int RunTrace(const Context& ctx, const TraceArgs& args) {
  v1::TraceStatusResponse r;
  grpc::Status s;
  switch (args.action) {
    case TraceArgs::Action::kStart:
      s = ctx.client->StartTrace(args.sample, args.duration_seconds, args.name, args.hash_keys, &r);
      break;
    case TraceArgs::Action::kStop:
      s = ctx.client->StopTrace(&r);
      break;
    case TraceArgs::Action::kStatus:
      s = ctx.client->TraceStatus(&r);
      break;
  }
  if (!s.ok()) return ReportRpcError(ctx, s);
  if (ctx.output == Output::kJson) {
    *ctx.out << Dump({{"active", r.active()},
                      {"path", r.path()},
                      {"sample", r.sample()},
                      {"keys_hashed", r.keys_hashed()},
                      {"records_written", r.records_written()},
                      {"records_dropped", r.records_dropped()},
                      {"bytes", r.bytes()},
                      {"ended_because", r.ended_because()}})
             << "\n";
  } else if (r.path().empty()) {
    *ctx.out << "no trace has run\n";
  } else {
    *ctx.out << (r.active() ? "tracing into " : "trace ") << r.path() << " (on the server): sample "
             << r.sample() << (r.keys_hashed() ? ", keys hashed" : "") << ", "
             << r.records_written() << " records, " << r.records_dropped() << " dropped, "
             << r.bytes() << " bytes";
    if (!r.active()) *ctx.out << "; ended: " << r.ended_because();
    *ctx.out << "\n";
  }
  return kExitOk;
}

namespace {

Options RestoreOptions(const RestoreArgs& args, const std::string& data_dir) {
  Options o;
  o.data_dir = data_dir;
  o.cache_bytes = args.cache_bytes;
  o.direct_io = args.direct_io;
  o.logger = NewNullLogger();
  return o;
}

void PrintRestore(const Context& ctx, const char* verb, const std::string& where,
                  const RestoreReport& r) {
  if (ctx.output == Output::kJson) {
    *ctx.out << Dump({{"data_dir", where},
                      {"variant", r.backup.variant},
                      {"checkpoint_epoch", r.backup.checkpoint_epoch},
                      {"last_lsn", r.backup.last_lsn},
                      {"replayed_records", r.replayed_records},
                      {"entries", r.verify.entries_checked},
                      {"pages_checked", r.verify.pages_checked},
                      {"check_seconds", r.check_seconds},
                      {"copy_seconds", r.copy_seconds},
                      {"open_seconds", r.open_seconds},
                      {"verify_seconds", r.verify_seconds}})
             << "\n";
  } else {
    *ctx.out << verb << " " << where << ": variant " << r.backup.variant << ", checkpoint "
             << r.backup.checkpoint_epoch << " and " << r.replayed_records
             << " log records up to LSN " << r.backup.last_lsn << "; " << r.verify.entries_checked
             << " entries, " << r.verify.pages_checked << " pages verified\n";
    std::ostringstream times;
    times << std::fixed << std::setprecision(1) << "  checksums " << r.check_seconds << " s, copy "
          << r.copy_seconds << " s, open " << r.open_seconds << " s, verify " << r.verify_seconds
          << " s\n";
    *ctx.out << times.str();
  }
}

int ReportEngineError(const Context& ctx, const char* what, const Status& s) {
  *ctx.err << "grovectl: " << what << ": " << s.ToString() << "\n";
  return kExitFailed;
}

}  // namespace

int RunRestore(const Context& ctx, const RestoreArgs& args) {
  RestoreReport r;
  Status s = RestoreBackup(args.backup_dir, RestoreOptions(args, args.data_dir), &r);
  if (!s.ok()) return ReportEngineError(ctx, "restore", s);
  PrintRestore(ctx, "restored into", args.data_dir, r);
  return kExitOk;
}

int RunVerifyBackup(const Context& ctx, const RestoreArgs& args) {
  if (args.checksums_only) {
    StatusOr<BackupInfo> info = CheckBackup(args.backup_dir);
    if (!info.ok()) return ReportEngineError(ctx, "verify-backup", info.status());
    if (ctx.output == Output::kJson) {
      *ctx.out << Dump({{"backup", args.backup_dir},
                        {"variant", info->variant},
                        {"checkpoint_epoch", info->checkpoint_epoch},
                        {"last_lsn", info->last_lsn},
                        {"checksums", "ok"}})
               << "\n";
    } else {
      *ctx.out << args.backup_dir << ": every file matches its checksum (variant " << info->variant
               << ", log up to LSN " << info->last_lsn << ")\n";
    }
    return kExitOk;
  }
  // Restore into a scratch directory and verify it there; the backup itself stays untouched.
  std::error_code ec;
  const std::string scratch = args.data_dir.empty() ? (std::filesystem::temp_directory_path(ec) /
                                                       ("grove-verify-" + std::to_string(getpid())))
                                                          .string()
                                                    : args.data_dir;
  RestoreReport r;
  Status s = RestoreBackup(args.backup_dir, RestoreOptions(args, scratch), &r);
  std::filesystem::remove_all(scratch, ec);
  if (!s.ok()) return ReportEngineError(ctx, "verify-backup", s);
  PrintRestore(ctx, "verified (restored, opened and checked, then removed)", args.backup_dir, r);
  return kExitOk;
}

}  // namespace grove::grovectl
