// The oracle's own repr() (gen/repr_oracle.hpp): its printability table against src/py's tables
// generated from the Unicode data of each Python (two sources that must agree; both were checked
// against PyPI unicodedata2 13.0-16.0 when the table was written), every name piece the generator
// uses is in the table, and hand-derived repr() results.
#include <gtest/gtest.h>

#include "gen/names.hpp"
#include "gen/repr_oracle.hpp"
#include "py/unicode_tables.hpp"

namespace w4a8::gen {
namespace {

TEST(ReprOracle, TableAgreesWithPythonUnicodeData) {
  for (char32_t cp : oracle_py::table_code_points())
    for (int v = 0; v < static_cast<int>(py::Version::kCount); ++v)
      EXPECT_EQ(oracle_py::printable(cp, static_cast<py::Version>(v)), py::is_printable(cp, static_cast<py::Version>(v)))
          << "U+" << std::hex << static_cast<unsigned>(cp) << " in Python " << py::version_name(static_cast<py::Version>(v));
}

TEST(ReprOracle, KnowsEveryStressPiece) {
  for (std::string_view piece : stress_pieces())
    EXPECT_EQ(oracle_py::repr_str(piece).find("\\N{?}"), std::string::npos) << oracle_py::repr_str(piece);
}

TEST(ReprOracle, HandDerived) {
  using oracle_py::repr_str;
  EXPECT_EQ(repr_str("a.b"), "'a.b'");
  EXPECT_EQ(repr_str("it's"), "\"it's\"");
  EXPECT_EQ(repr_str("'\""), "'\\'\"'");
  EXPECT_EQ(repr_str("\\\t\n\r\x01\x7f"), "'\\\\\\t\\n\\r\\x01\\x7f'");
  EXPECT_EQ(repr_str("\xc2\x85\xc2\xa0\xc2\xad\xc3\xa9"), "'\\x85\\xa0\\xad\xc3\xa9'");
  EXPECT_EQ(repr_str("\xe2\x80\xa8\xef\xbb\xbf\xee\x80\x80"), "'\\u2028\\ufeff\\ue000'");
  EXPECT_EQ(repr_str("\xf3\xa0\x80\x81\xf0\x9f\x98\x80"), "'\\U000e0001\xf0\x9f\x98\x80'");
  EXPECT_EQ(repr_str("\xe0\xa1\xb0", py::Version::Py310), "'\\u0870'");
  EXPECT_EQ(repr_str("\xe0\xa1\xb0", py::Version::Py311), "'\xe0\xa1\xb0'");
  EXPECT_EQ(repr_str("\xf0\x9f\xab\xa9", py::Version::Py313), "'\\U0001fae9'");
  EXPECT_EQ(repr_str("\xed\xa0\x80"), "'\\ud800'");
  EXPECT_EQ(repr_str("\xf0\x9f\x8d\x95"), "'\\N{?}'");  // not in the table: visible, never guessed
}

}  // namespace
}  // namespace w4a8::gen
