// The dtype table against the Python package: names and their order from the crate's own
// "unknown variant" message, bit sizes from which byte count it accepts for 8 elements.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "safetensors/dtype.hpp"
#include "support/python.hpp"

namespace w4a8::st {
namespace {

constexpr const char* kScript = R"PY(
import os, re, struct, tempfile
from safetensors import safe_open
def verdict(h, data):
    fd, p = tempfile.mkstemp()
    os.write(fd, struct.pack('<Q', len(h)) + h + data); os.close(fd)
    try:
        with safe_open(p, 'numpy'): return ''
    except Exception as e: return str(e)
    finally: os.unlink(p)
msg = verdict(b'{"x":{"dtype":"?","shape":[],"data_offsets":[0,0]}}', b'')
for name in re.findall(r'`([A-Z0-9_]+)`', msg.split('expected one of', 1)[1]):
    for k in range(1, 65):
        h = ('{"x":{"dtype":"%s","shape":[8],"data_offsets":[0,%d]}}' % (name, k)).encode()
        if verdict(h, b'\0' * k) == '':
            print(name, k)
)PY";

TEST(StDtype, MatchesPythonPackage) {
  const auto run = w4a8::testing::PythonCall::code(kScript).run();
  EXPECT_TRUE(run.ok()) << "python3 or the safetensors package missing";
  std::size_t i = 0;
  for (const auto& line : run.lines) {
    std::istringstream in(line);
    std::string name;
    unsigned bytes = 0;
    ASSERT_TRUE(in >> name >> bytes) << line;
    ASSERT_LT(i, std::size_t(Dtype::kCount)) << name;
    const auto d = Dtype(i++);
    EXPECT_EQ(dtype_name(d), name);
    EXPECT_EQ(dtype_bits(d), bytes) << name;  // 8 elements of b bits take b bytes
    EXPECT_EQ(dtype_from_name(name), d);
  }
  EXPECT_EQ(i, std::size_t(Dtype::kCount));
}

TEST(StDtype, Lookup) {
  EXPECT_EQ(dtype_from_name("f32"), std::nullopt);
  EXPECT_EQ(dtype_from_name("F32 "), std::nullopt);
  EXPECT_EQ(dtype_from_name(""), std::nullopt);
  EXPECT_EQ(dtype_from_name("F8_E4M3"), Dtype::F8_E4M3);
  EXPECT_EQ(dtype_name(Dtype::kCount), "");
  EXPECT_EQ(dtype_bits(Dtype::kCount), 0u);
}

}  // namespace
}  // namespace w4a8::st
