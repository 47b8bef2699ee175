#pragma once

// Reads key/value records for `grovectl load` from CSV, TSV or JSON Lines.
//
//   csv    key,value per record (RFC 4180: fields with commas, quotes or newlines are quoted,
//          "" is a quote inside a quoted field); optional header line (skip_header)
//   tsv    key<TAB>value per line; \t \n \r \\ inside fields are escapes
//   jsonl  one object per line: {"key": "...", "value": "..."}; with "op": "delete" the record
//          deletes the key (no value); "op": "put" is the default
//
// Keys and values in the file are written in `key_format` / `value_format` (text, hex, base64,
// u64). Errors name the source and line: "data.csv:12: expected 2 fields (key,value), found 3".

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>

#include "grove/client/codec.h"

namespace grove::client {

enum class FileFormat { kCsv, kTsv, kJsonl };

// "csv", "tsv", "jsonl" (also "ndjson").
std::optional<FileFormat> ParseFileFormat(std::string_view name);
// From the file name's extension: .csv, .tsv/.tab, .jsonl/.ndjson.
std::optional<FileFormat> FileFormatFromPath(std::string_view path);

struct Record {
  bool is_delete = false;
  std::string key;
  std::string value;
};

class RecordReader {
 public:
  RecordReader(std::istream& in, FileFormat format, Format key_format, Format value_format,
               std::string source, bool skip_header = false);

  // Reads the next record. False at the end of the input or on an error (then error() is set).
  bool Next(Record* record);

  const std::string& error() const { return error_; }
  // Bytes consumed so far (for progress reporting).
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  bool ReadLine(std::string* line);
  bool NextCsv(Record* record);
  bool NextTsv(Record* record);
  bool NextJsonl(Record* record);
  bool DecodeFields(std::string key, std::string value, bool is_delete, Record* record);
  bool Fail(const std::string& what);

  std::istream& in_;
  const FileFormat format_;
  const Format key_format_;
  const Format value_format_;
  const std::string source_;
  bool skip_header_;
  uint64_t line_ = 0;         // number of the last line read
  uint64_t record_line_ = 0;  // first line of the current record
  uint64_t bytes_read_ = 0;
  std::string error_;
};

}  // namespace grove::client
