#include "grove/client/record_reader.h"

#include <vector>

#include <nlohmann/json.hpp>

namespace grove::client {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Decodes the TSV escapes \t \n \r \\. False on any other backslash sequence.
bool UnescapeTsv(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\') {
      out->push_back(in[i]);
      continue;
    }
    if (++i == in.size()) return false;
    switch (in[i]) {
      case 't':
        out->push_back('\t');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case '\\':
        out->push_back('\\');
        break;
      default:
        return false;
    }
  }
  return true;
}

}  // namespace

std::optional<FileFormat> ParseFileFormat(std::string_view name) {
  if (name == "csv") return FileFormat::kCsv;
  if (name == "tsv") return FileFormat::kTsv;
  if (name == "jsonl" || name == "ndjson") return FileFormat::kJsonl;
  return std::nullopt;
}

std::optional<FileFormat> FileFormatFromPath(std::string_view path) {
  if (EndsWith(path, ".csv")) return FileFormat::kCsv;
  if (EndsWith(path, ".tsv") || EndsWith(path, ".tab")) return FileFormat::kTsv;
  if (EndsWith(path, ".jsonl") || EndsWith(path, ".ndjson")) return FileFormat::kJsonl;
  return std::nullopt;
}

RecordReader::RecordReader(std::istream& in, FileFormat format, Format key_format,
                           Format value_format, std::string source, bool skip_header)
    : in_(in),
      format_(format),
      key_format_(key_format),
      value_format_(value_format),
      source_(std::move(source)),
      skip_header_(skip_header) {}

bool RecordReader::Fail(const std::string& what) {
  error_ = source_ + ":" + std::to_string(record_line_) + ": " + what;
  return false;
}

bool RecordReader::ReadLine(std::string* line) {
  if (!std::getline(in_, *line)) return false;
  ++line_;
  bytes_read_ += line->size() + 1;
  return true;
}

bool RecordReader::Next(Record* record) {
  if (!error_.empty()) return false;
  while (true) {
    bool got = false;
    switch (format_) {
      case FileFormat::kCsv:
        got = NextCsv(record);
        break;
      case FileFormat::kTsv:
        got = NextTsv(record);
        break;
      case FileFormat::kJsonl:
        got = NextJsonl(record);
        break;
    }
    if (!got) return false;
    if (skip_header_) {
      skip_header_ = false;
      continue;
    }
    return true;
  }
}

bool RecordReader::DecodeFields(std::string key, std::string value, bool is_delete,
                                Record* record) {
  std::string why;
  record->is_delete = is_delete;
  if (!Decode(key_format_, key, &record->key, &why)) return Fail("key: " + why);
  if (record->key.empty()) return Fail("key: must not be empty");
  if (is_delete) {
    record->value.clear();
    return true;
  }
  if (!Decode(value_format_, value, &record->value, &why)) return Fail("value: " + why);
  return true;
}

bool RecordReader::NextCsv(Record* record) {
  std::string line;
  // Skip blank lines between records.
  do {
    if (!ReadLine(&line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
  } while (line.empty());
  record_line_ = line_;

  std::vector<std::string> fields(1);
  bool quoted = false;      // inside a quoted field
  bool was_quoted = false;  // the current field started with a quote
  size_t i = 0;
  while (true) {
    if (i == line.size()) {
      if (!quoted) break;
      // A quoted field continues on the next line.
      std::string next;
      if (!ReadLine(&next)) return Fail("unterminated quoted field");
      if (!next.empty() && next.back() == '\r') next.pop_back();
      fields.back() += '\n';
      line = std::move(next);
      i = 0;
      continue;
    }
    const char c = line[i++];
    if (quoted) {
      if (c != '"') {
        fields.back() += c;
      } else if (i < line.size() && line[i] == '"') {
        fields.back() += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == ',') {
      fields.emplace_back();
      was_quoted = false;
    } else if (c == '"' && fields.back().empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (was_quoted) {
      return Fail("text after a closing quote");
    } else {
      fields.back() += c;
    }
  }
  if (fields.size() != 2) {
    return Fail("expected 2 fields (key,value), found " + std::to_string(fields.size()));
  }
  return DecodeFields(std::move(fields[0]), std::move(fields[1]), false, record);
}

bool RecordReader::NextTsv(Record* record) {
  std::string line;
  do {
    if (!ReadLine(&line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
  } while (line.empty());
  record_line_ = line_;
  const size_t tab = line.find('\t');
  if (tab == std::string::npos || line.find('\t', tab + 1) != std::string::npos) {
    return Fail("expected key<TAB>value (exactly one tab; write a tab inside a field as \\t)");
  }
  std::string key, value;
  if (!UnescapeTsv(std::string_view(line).substr(0, tab), &key) ||
      !UnescapeTsv(std::string_view(line).substr(tab + 1), &value)) {
    return Fail("bad escape (allowed: \\t \\n \\r \\\\)");
  }
  return DecodeFields(std::move(key), std::move(value), false, record);
}

bool RecordReader::NextJsonl(Record* record) {
  std::string line;
  do {
    if (!ReadLine(&line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
  } while (line.find_first_not_of(" \t") == std::string::npos);
  record_line_ = line_;
  // parse() without exceptions: a discarded value signals a syntax error.
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Fail("not valid JSON");
  if (!j.is_object()) return Fail("expected a JSON object {\"key\": ..., \"value\": ...}");
  bool is_delete = false;
  if (auto op = j.find("op"); op != j.end()) {
    if (!op->is_string() || (*op != "put" && *op != "delete")) {
      return Fail("op: must be \"put\" or \"delete\"");
    }
    is_delete = *op == "delete";
  }
  const auto key = j.find("key");
  if (key == j.end() || !key->is_string()) return Fail("key: missing, or not a string");
  const auto value = j.find("value");
  if (is_delete) {
    if (value != j.end()) return Fail("value: not allowed with \"op\": \"delete\"");
    return DecodeFields(key->get<std::string>(), "", true, record);
  }
  if (value == j.end() || !value->is_string()) return Fail("value: missing, or not a string");
  return DecodeFields(key->get<std::string>(), value->get<std::string>(), false, record);
}

}  // namespace grove::client
