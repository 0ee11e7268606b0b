// Byte-exact messages for hand-picked headers, one per serde_json/Utf8Error/crate failure shape:
// every header goes through tools/oracle/safetensors_verdict.py (the Python `safetensors` package,
// i.e. the crate + serde_json) and our parse() must print the same text, position included.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"
#include "support/python.hpp"

namespace w4a8::st {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> headers() {
  std::vector<std::string> h = {
      "\xff{}",
      "{\"a\":1}\xe2\x82",
      "{\"\xe2\x82x\":1}",
      "ab\xf0\x9f",
      "\xf0\x9f\x98",
      "ab\xf0\x9f\x98x",
      "\xed\xa0\x80",
      "\xc0\x80",
      "\xf4\x90\x80\x80",
      "{",
      "",
      " ",
      "{\"a\":1} x",
      "{1:2}",
      "{\"a\" 1}",
      "{\"a\":1 \"b\"}",
      "[1 2]",
      "[]",
      "1",
      "{\"a\":{}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4],\"dtype\":\"F32\"}}",
      "{\"a\":{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,4]}}",
      "{\"a\":\"\\q\"}",
      "{\"a\":\"\x01\"}",
      "{\"a\":1e999}",
      "{\"a\":\"\\ud800\"}",
      "{\"a\":\"\\udc00\"}",
      "{\"a\\nb\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[4,8]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[18446744073709551615,2],\"data_offsets\":[0,4]}}",
      "{\"a\":{\"dtype\":\"F4\",\"shape\":[1],\"data_offsets\":[0,4]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
      "{\"a\":\"x\\u12\"}",
      "{\"a\":tru}",
      "{\"a\":-}",
      "{\"a\":01}",
      "{\"a\":[1,]}",
      "{\"a\":1,}",
      "{\"a\":\"\\ud800\\u0041\"}",
      "{\"a\":\"\\ud800x\"}",
      "{\n\"a\":\n  nul}",
      "{\"a\":null}",
      "{\"a\":true}",
      "{\"a\":-1}",
      "{\"a\":1.5}",
      "{\"a\":1e20}",
      "{\"a\":-0}",
      "{\"a\":123456789012345678901234}",
      "{\"a\":\"x\\\"y\"}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,0]}}",
      "{\"a\":[1,2,3,4]}",
      "{\"a\":[\"F32\",[],[0,0],5]}",
      "{\"a\":[\"F32\",[]]}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,0,0]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0]}}",
      "{\"a\":{\"dtype\":{\"F32\":1},\"shape\":[],\"data_offsets\":[0]}}",
      "{\"a\":{\"dtype\":{\"F32\":null,\"X\":null},\"shape\":[],\"data_offsets\":[0]}}",
      "{\"__metadata__\":{\"a\":1}, \"b\" 2}",
      "{\"__metadata__\":null ,  \"__metadata__\"  :3}",
      "{\"__metadata__\":[1]}",
      "{\"__metadata__\":{\"a\":[1]}}",
      "{\"a\":1e-7}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1e300]}}",
      "{\"a\":1e15}",
      "{\"a\":1e16}",
      "{\"a\":12345678901234567}",
      "{\"a\":1.5e16}",
      "{\"a\":0.001}",
      "{\"a\":0.0001}",
      "{\"a\":0.00001}",
      "{\"a\":1.5e-5}",
      "{\"a\":1234567890123456.7}",
      "{\"a\":123456789012345.67}",
      "{\"a\":1e-300}",
      "{\"a\":5e-324}",
      "{\"a\":0.1}",
      "{\"a\":100.0}",
      "{\"a\":1e0}",
      "{\"a\":18446744073709551616}",
      "{\"a\":-9223372036854775809}",
      "{\"a\":-1e-10}",
      "{\"a\":0.0}",
      "{\"a\":\"\\uZ000\"}",
      "{\"a\":\"\\uZ0",
      "{\"a\":1.}",
      "{\"a\":1.",
      "{\"a\":1e}",
      "{\"a\":1e",
      "{\"a\":1e+x}",
      "{\"a\":-",
      "{\"a\":1e99999999999999999999}",
      "{\"a\":\"\\ud800",
      "{\"a\":\"\\ud800\\",
      "{\"a\":\"\\ud800\\n\"}",
      "{\"a\":[1",
      "{\"a\":[",
      "{\"a\":[1,",
      "{\"a\":[1 2]}",
      "{\"a\":",
      "{\"a\"",
      "{\"a\":1",
      "{\"a\":1,",
      "{,}",
      "{\"a\":1,\"b\":2,}",
      "{\"a\":\"ab",
      "{\"a\":\"ab\\",
      "{\"a\":nulx}",
      "{\"a\":x}",
      "{\"a\":[x]}",
      " {\"a\":1} ",
      "{\"a\":1}  x",
      "\"abc\"  x",
      "null",
      "nul",
      "true x",
      "-0 x",
      "\"a\\u0000\"",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,0]}} ",
      "{\"a\":1e-6}",
      "{\"a\":0e99999999999999}",
      "{\"a\":1e-99999999999999}",
      "{\"a\":[{\"b\":1},2]}",
      "{\"__metadata__\":{\"a\":\"b\"},\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,0]}}",
      "{\"x\":1,\"__metadata__\":{\"a\":2}}",
      "{\"x\":1,\"__metadata__\":{\"a\":{}}}",
      "{\"__metadata__\":3}",
      "{\"__metadata__\":\"s\"}",
      "{\"__metadata__\":true }",
      "1x",
      "\"a\"x",
      "nullx",
      "[",
      "{\"a\":[]}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,0]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":\"x\"}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,-3]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,1.5]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[]}}",
      "{\"a\":[\"F32\",[],[0,0]]}",
      "{\"a\":[\"F32\",[],[0,4]]}",
      "{\"a\":[\"F32\"]}",
      "{\"a\":[]}",
      "{\"a\":{\"shape\":[]}}",
      "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,0]}}",
      "{\"a\":{\"dtype\":{},\"shape\":[],\"data_offsets\":[0,0]}}",
      "{\"a\":{\"dtype\":{\"X\":null},\"shape\":[],\"data_offsets\":[0,0]}}",
      "{\"a\":{\"dtype\":null,\"shape\":[],\"data_offsets\":[0,0]}}",
      "{\"a\":\"\\u00e9\\t\\u0001\\u007f\\u0085\"}",
      "{\"a\":\"\\ud83d\\ude00\"}",
      "{\"a\":true,\"b\":1}",
      "{\"a\":fals}",
      "{\"a\":f}",
      "{\"a\":t",
      "{\"a\":tx",
      "{\"a\":\"\\u12\"}",
      "\"\\ud800\"",
      "\"\\ud800\\uZZZZ\"",
      "{\"a\":-01}",
      "{\"a\":00}",
      "{\"a\":1.5.}",
      "{\"a\":.5}",
      "{\"a\":+1}",
      "{\"a\":NaN}",
      "{\"a\":Infinity}",
      "{\"a\":-Infinity}",
      "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
      "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
      "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
      "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
      "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
      "{\"a\":1.8e308}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,0],\"x\":1.8e308}}",
      "\n\n {\"a\":\n 1}",
      "{\n\"a\":\r\n[1\n 2]}",
      "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[3,7]}}",
      "{\"a\\\"b\\\\\\n\\t\\u0000\\u0001\\u00e9\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[3,7]}}",
      "{\"__metadata__\":{\"a\":\"b\",\"c\":[1, 2 3]}}",
      "{\"__metadata__\":{\"a\":\"b\",\"c\":{\"x\" 1}}}",
      "{\"__metadata__\":{\"a\":1 \"c\":{\"x\" 1}}}",
      "{\"__metadata__\":3 x}",
      "{\"__metadata__\":null, \"__metadata__\" x}",
      "{\"__metadata__\":\"a\" , \"x\" 1}",
      "{\"__metadata__\":{\"a\":\"b\"}, \"x\":[1 2]}",
      "{\"\\u005f_metadata__\":1}",
      "{\"__metadata__\":{\"a\":\"b\"}} x",
      "{\"__metadata__\":{\"a\":2}} x",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,0]}} x",
      "{\"__metadata__\":{\"a\":\"b\",\"c\":tru}}",
      // Literals glued to text in streamed metadata: the type error comes before the syntax error
      // (the DOM reference path got these wrong until the single-pass reader showed it).
      "{\"__metadata__\":trueetadata__\":true}",
      "{\"__metadata__\":{\"a\":nullta__\":{\"a\":null}}",
      "{\"__metadata__\":{\"a\":1x}}",
      "{\"__metadata__\":{\"a\":-0x}}",
      "{\"__metadata__\":nullx}",
      "{\"__metadata__\":falsey}",
      // Rust Debug escapes of non-printable and grapheme-extending code points in strings.
      "\"a\\u0085\"",
      "\"a\\u00a0\"",
      "\"a\\u00ad\"",
      "\"a\\u0300\"",
      "\"a\\u0378\"",
      "\"a\\u061c\"",
      "\"a\\u200b\"",
      "\"a\\u200c\"",
      "\"a\\u200d\"",
      "\"a\\u2028\"",
      "\"a\\u2029\"",
      "\"a\\u3000\"",
      "\"a\\ue000\"",
      "\"a\\ufeff\"",
      "\"a\\ufff9\"",
      "\"a\\uffff\"",
      "\"a\xf0\x9f\x98\x80\"",
      "\"a\xf0\x9f\x8f\xbb\"",
      "\"a\xf3\xa0\x80\xa0\"",
      "\"a\xf3\xa0\x84\x80\"",
      "\"a\xf4\x8f\xbf\xbf\"",
      "\"a\\u09be\"",
      "\"a\xf0\x9d\x85\xa5\"",
      "\"a\\u0903\"",
      "\"a\\u1160\"",
      "\"a\\uff9e\"",
      "\"a\\u2060\"",
      "\"a\\u1b35\"",
      "\"a\\ua8ff\"",
      "\"a\xf0\x9e\x93\xac\"",
  };
  // Depth: serde_json's recursion limit is the 128th container; root included.
  for (int k : {125, 126, 127, 128, 130}) h.push_back("{\"a\":" + std::string(std::size_t(k), '['));
  for (int k : {125, 126, 127, 128})
    h.push_back("{\"a\":" + std::string(std::size_t(k), '[') + std::string(std::size_t(k), ']') + "}");
  h.push_back(std::string(200, '['));
  h.push_back("{\"__metadata__\":{\"a\":" + std::string(200, '[') + "}}");  // streamed: type error first
  h.push_back("{\"a\":1" + std::string(400, '0') + "}");                     // f64 overflow at the end
  return h;
}

TEST(StMessages, MatchPythonSafetensorsByteForByte) {
  const auto cases = headers();
  std::string tmpl = (fs::temp_directory_path() / "w4a8_st_msg_XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  std::vector<std::vector<std::uint8_t>> files;
  {
    std::ofstream list(dir / "list.txt");
    for (std::size_t i = 0; i < cases.size(); ++i) {
      std::vector<std::uint8_t> b(8);
      for (int k = 0; k < 8; ++k) b[std::size_t(k)] = std::uint8_t(std::uint64_t(cases[i].size()) >> (8 * k));
      b.insert(b.end(), cases[i].begin(), cases[i].end());
      const fs::path p = dir / ("m" + std::to_string(i) + ".safetensors");
      ASSERT_TRUE(write_file(p.string(), b).ok());
      list << p.string() << "\n";
      files.push_back(std::move(b));
    }
  }
  auto run = w4a8::testing::PythonCall::script("tools/oracle/safetensors_verdict.py")
                 .stdin_from((dir / "list.txt").string())
                 .run();
  ASSERT_TRUE(run.ok()) << "oracle failed (python3 or the safetensors package missing?): " << run.command;
  const std::vector<std::string> lines = std::move(run.lines);
  ASSERT_EQ(lines.size(), cases.size());
  std::size_t same = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto v = json::loads_str(lines[i]);
    ASSERT_TRUE(v.ok() && v->is_object()) << lines[i];
    const json::Value* msg = v->get("message");
    ASSERT_TRUE(msg && msg->is_string()) << lines[i];
    auto r = parse(files[i]);
    const std::string mine = r.ok() ? std::string() : r.error().message;
    EXPECT_EQ(mine, msg->text) << "header: " << cases[i].substr(0, 200);
    same += mine == msg->text;
  }
  std::printf("messages: %zu/%zu headers byte-identical\n", same, cases.size());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace w4a8::st
