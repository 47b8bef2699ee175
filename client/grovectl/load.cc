// grovectl load: records from a CSV, TSV or JSONL file, sent as BatchInsert calls of at most
// --batch-entries records and --batch-bytes of keys and values. Each batch is atomic; when a call
// fails, the batches before it stay applied and the summary says how far the load got.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <sys/stat.h>
#include <unistd.h>

#include "grovectl/commands.h"
#include "grovectl/progress.h"

namespace grove::grovectl {

int RunLoad(const Context& ctx, const LoadArgs& args) {
  std::optional<client::FileFormat> format = args.format.empty()
                                                 ? client::FileFormatFromPath(args.file)
                                                 : client::ParseFileFormat(args.format);
  if (!format) {
    *ctx.err << "grovectl: --format: "
             << (args.format.empty() ? "cannot tell the format from the file name '" + args.file +
                                           "'; give --format csv, tsv or jsonl"
                                     : "'" + args.format + "' is not csv, tsv or jsonl")
             << "\n";
    return kExitUsage;
  }
  std::ifstream file;
  std::istream* in = ctx.in;
  uint64_t total_bytes = 0;
  if (args.file != "-") {
    file.open(args.file, std::ios::binary);
    if (!file) {
      *ctx.err << "grovectl: cannot read '" << args.file << "'\n";
      return kExitUsage;
    }
    struct stat st {};
    if (stat(args.file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) total_bytes = st.st_size;
    in = &file;
  }
  client::RecordReader reader(*in, *format, ctx.key_format, ctx.value_format,
                              args.file == "-" ? "<stdin>" : args.file, args.header);
  const bool show = args.progress == 1 || (args.progress < 0 && isatty(STDERR_FILENO));
  Progress progress(*ctx.err, show, total_bytes);

  const auto start = std::chrono::steady_clock::now();
  uint64_t loaded = 0, deletes = 0, batches = 0, payload = 0;
  std::vector<client::Mutation> batch;
  uint64_t batch_bytes = 0, batch_deletes = 0;
  auto send = [&]() -> grpc::Status {
    if (batch.empty()) return grpc::Status::OK;
    grpc::Status s = ctx.client->BatchInsert(batch);
    if (!s.ok()) return s;
    ++batches;
    loaded += batch.size();
    deletes += batch_deletes;
    payload += batch_bytes;
    batch.clear();
    batch_bytes = 0;
    batch_deletes = 0;
    progress.Update(loaded, reader.bytes_read());
    return s;
  };

  client::Record record;
  grpc::Status failed;
  while (reader.Next(&record)) {
    const uint64_t bytes = record.key.size() + record.value.size();
    if (!batch.empty() &&
        (batch.size() >= args.batch_entries || batch_bytes + bytes > args.batch_bytes)) {
      if (failed = send(); !failed.ok()) break;
    }
    batch_deletes += record.is_delete ? 1 : 0;
    batch.push_back(
        {record.is_delete ? client::Mutation::Type::kDelete : client::Mutation::Type::kPut,
         std::move(record.key), std::move(record.value)});
    batch_bytes += bytes;
  }
  if (failed.ok() && reader.error().empty()) failed = send();
  progress.Finish();

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char elapsed[32];
  std::snprintf(elapsed, sizeof(elapsed), "%.2f", seconds);
  *ctx.err << "loaded " << loaded << " records (" << loaded - deletes << " puts, " << deletes
           << " deletes; " << HumanBytes(payload) << " of keys and values) in " << batches
           << " batches, " << elapsed << " s, "
           << static_cast<uint64_t>(seconds > 0 ? loaded / seconds : 0) << " records/s\n";
  if (!reader.error().empty()) {
    *ctx.err << "grovectl: stopped at " << reader.error()
             << " (records from the unsent batch on were not loaded)\n";
    return kExitUsage;
  }
  if (!failed.ok()) {
    *ctx.err << "grovectl: the batch after record " << loaded
             << " was not applied (each batch is all or nothing)\n";
    return ReportRpcError(ctx, failed);
  }
  return kExitOk;
}

}  // namespace grove::grovectl
