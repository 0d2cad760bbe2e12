// Runs every conformance case (check/cases_*.cpp) on every device present, for every dtype the op
// is defined for and every layout kind the case covers. One test per op and device.
#include <map>
#include <set>

#include "check/harness.h"
#include "test_util.h"

namespace wick::check {
namespace {

struct Param {
  Op op;
  Device device;
};

std::vector<Param> params() {
  std::vector<Param> out;
  std::set<Op> ops;
  for (const Case& c : all_cases()) ops.insert(c.op);
  for (const Device& d : testing::test_devices())
    for (Op op : ops) out.push_back({op, d});
  return out;
}

class Conformance : public ::testing::TestWithParam<Param> {};

TEST_P(Conformance, MatchesReference) {
  const Param& p = GetParam();
  int ran = 0;
  for (const Case& c : all_cases()) {
    if (c.op != p.op) continue;
    for (DType dt : kAllDTypes)
      for (LayoutKind lk : kLayoutKinds) {
        const Outcome o = run_case(c, p.device, dt, lk);
        if (o.status == Status::NotApplicable) continue;
        ++ran;
        EXPECT_EQ(o.status, Status::Pass)
            << op_name(p.op) << (c.variant.empty() ? "" : " (" + c.variant + ")") << " " << dtype_name(dt) << " "
            << layout_name(lk) << " on " << p.device.location() << ": "
            << (o.status == Status::Unsupported ? "unsupported: " : "") << o.message;
      }
  }
  EXPECT_GT(ran, 0) << "no applicable case ran for " << op_name(p.op);
}

INSTANTIATE_TEST_SUITE_P(Ops, Conformance, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           std::string s = std::string(op_name(info.param.op)) + "_" + info.param.device.location();
                           for (char& c : s)
                             if (c == ':') c = '_';
                           return s;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conformance);

}  // namespace
}  // namespace wick::check
