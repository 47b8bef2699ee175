#include "grove/client/record_reader.h"

#include <sstream>
#include <vector>

#include <gtest/gtest.h>

namespace grove::client {
namespace {

struct Result {
  std::vector<Record> records;
  std::string error;
};

Result ReadAll(const std::string& text, FileFormat f, Format key = Format::kText,
               Format value = Format::kText, bool header = false) {
  std::istringstream in(text);
  RecordReader reader(in, f, key, value, "in", header);
  Result r;
  Record rec;
  while (reader.Next(&rec)) r.records.push_back(rec);
  r.error = reader.error();
  return r;
}

TEST(RecordReaderTest, FormatFromNameAndPath) {
  EXPECT_EQ(ParseFileFormat("csv"), FileFormat::kCsv);
  EXPECT_EQ(ParseFileFormat("ndjson"), FileFormat::kJsonl);
  EXPECT_FALSE(ParseFileFormat("xml").has_value());
  EXPECT_EQ(FileFormatFromPath("/x/data.tsv"), FileFormat::kTsv);
  EXPECT_EQ(FileFormatFromPath("data.jsonl"), FileFormat::kJsonl);
  EXPECT_FALSE(FileFormatFromPath("data.txt").has_value());
}

TEST(RecordReaderTest, CsvQuotingAndMultilineFields) {
  Result r =
      ReadAll("a,1\r\n\"b,c\",\"say \"\"hi\"\"\"\n\nd,\"line1\nline2\"\ne,\n", FileFormat::kCsv);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.records.size(), 4u);
  EXPECT_EQ(r.records[0].key, "a");
  EXPECT_EQ(r.records[0].value, "1");
  EXPECT_EQ(r.records[1].key, "b,c");
  EXPECT_EQ(r.records[1].value, "say \"hi\"");
  EXPECT_EQ(r.records[2].value, "line1\nline2");
  EXPECT_EQ(r.records[3].key, "e");
  EXPECT_EQ(r.records[3].value, "");
}

TEST(RecordReaderTest, CsvHeaderAndErrors) {
  Result r = ReadAll("key,value\nk,v\n", FileFormat::kCsv, Format::kText, Format::kText, true);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].key, "k");
  EXPECT_EQ(ReadAll("a,1\nb,2,3\n", FileFormat::kCsv).error,
            "in:2: expected 2 fields (key,value), found 3");
  EXPECT_EQ(ReadAll("a\n", FileFormat::kCsv).error, "in:1: expected 2 fields (key,value), found 1");
  EXPECT_EQ(ReadAll("\"a,1\n", FileFormat::kCsv).error, "in:1: unterminated quoted field");
  EXPECT_EQ(ReadAll("\"a\"x,1\n", FileFormat::kCsv).error, "in:1: text after a closing quote");
  EXPECT_EQ(ReadAll(",1\n", FileFormat::kCsv).error, "in:1: key: must not be empty");
}

TEST(RecordReaderTest, Tsv) {
  Result r = ReadAll("a\t1\nb\\tc\tx\\ny\\\\\n", FileFormat::kTsv);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[1].key, "b\tc");
  EXPECT_EQ(r.records[1].value, "x\ny\\");
  EXPECT_NE(ReadAll("a\t1\t2\n", FileFormat::kTsv).error.find("in:1: expected key<TAB>value"),
            std::string::npos);
  EXPECT_NE(ReadAll("a\\q\t1\n", FileFormat::kTsv).error.find("in:1: bad escape"),
            std::string::npos);
}

TEST(RecordReaderTest, JsonlPutsAndDeletes) {
  Result r = ReadAll(
      "{\"key\":\"a\",\"value\":\"1\"}\n  \n{\"key\":\"b\",\"op\":\"delete\"}\n"
      "{\"op\":\"put\",\"key\":\"c\",\"value\":\"\"}\n",
      FileFormat::kJsonl);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_FALSE(r.records[0].is_delete);
  EXPECT_TRUE(r.records[1].is_delete);
  EXPECT_EQ(r.records[1].key, "b");
  EXPECT_EQ(r.records[2].value, "");
}

TEST(RecordReaderTest, JsonlErrors) {
  EXPECT_EQ(ReadAll("{\"key\":\"a\",\"value\":\"1\"}\n{nope\n", FileFormat::kJsonl).error,
            "in:2: not valid JSON");
  EXPECT_EQ(ReadAll("[1]\n", FileFormat::kJsonl).error,
            "in:1: expected a JSON object {\"key\": ..., \"value\": ...}");
  EXPECT_EQ(ReadAll("{\"key\":1,\"value\":\"1\"}\n", FileFormat::kJsonl).error,
            "in:1: key: missing, or not a string");
  EXPECT_EQ(ReadAll("{\"key\":\"a\"}\n", FileFormat::kJsonl).error,
            "in:1: value: missing, or not a string");
  EXPECT_EQ(ReadAll("{\"key\":\"a\",\"op\":\"upsert\",\"value\":\"\"}\n", FileFormat::kJsonl).error,
            "in:1: op: must be \"put\" or \"delete\"");
  EXPECT_EQ(
      ReadAll("{\"key\":\"a\",\"op\":\"delete\",\"value\":\"x\"}\n", FileFormat::kJsonl).error,
      "in:1: value: not allowed with \"op\": \"delete\"");
}

TEST(RecordReaderTest, FieldsUseTheKeyAndValueFormats) {
  Result r = ReadAll("42,68690a\n", FileFormat::kCsv, Format::kU64, Format::kHex);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].key, std::string("\0\0\0\0\0\0\0\x2a", 8));
  EXPECT_EQ(r.records[0].value, "hi\n");
  EXPECT_EQ(ReadAll("x,00\n", FileFormat::kCsv, Format::kU64).error,
            "in:1: key: 'x' is not a u64 (a decimal integer 0..18446744073709551615)");
  EXPECT_EQ(ReadAll("1,0\n", FileFormat::kCsv, Format::kText, Format::kHex).error,
            "in:1: value: '0' is not hex (two hex digits per byte)");
}

TEST(RecordReaderTest, CountsBytesForProgress) {
  std::istringstream in("a,1\nb,2\n");
  RecordReader reader(in, FileFormat::kCsv, Format::kText, Format::kText, "in");
  Record rec;
  ASSERT_TRUE(reader.Next(&rec));
  EXPECT_EQ(reader.bytes_read(), 4u);
  ASSERT_TRUE(reader.Next(&rec));
  EXPECT_EQ(reader.bytes_read(), 8u);
  EXPECT_FALSE(reader.Next(&rec));
  EXPECT_EQ(reader.error(), "");
}

}  // namespace
}  // namespace grove::client
