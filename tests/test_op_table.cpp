// The op table drives the backends and `wick check`: every row has a conformance case, kinds and
// names are consistent, and a backend that lacks a row reports it as unsupported, both through the
// front end (UnsupportedError) and in the conformance matrix.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "backend/backend.h"
#include "check/harness.h"
#include "wick/wick.h"

namespace {

using namespace wick;

TEST(OpTable, EveryRowHasAConformanceCase) {
  std::set<Op> covered;
  for (const check::Case& c : check::all_cases()) covered.insert(c.op);
  for (const OpInfo& info : kOpTable) EXPECT_TRUE(covered.count(info.op)) << info.name << " has no case in check/";
}

TEST(OpTable, NamesAreUniqueAndParse) {
  std::set<std::string_view> names;
  for (int i = 0; i < kNumOps; ++i) {
    const OpInfo& info = kOpTable[i];
    EXPECT_EQ(static_cast<int>(info.op), i);
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    Op parsed{};
    ASSERT_TRUE(parse_op(info.name, &parsed)) << info.name;
    EXPECT_EQ(parsed, info.op);
    EXPECT_NE(info.dtypes, 0u) << info.name;
  }
}

TEST(OpTable, ElementwiseListsHoldTheirKinds) {
#define WICK_X(name, str, kind, mask, fn) \
  EXPECT_TRUE(op_kind(Op::name) == OpKind::Unary || op_kind(Op::name) == OpKind::UnaryParam) << str;
  WICK_UNARY_OPS(WICK_X)
#undef WICK_X
#define WICK_X(name, str, kind, mask, fn) EXPECT_EQ(op_kind(Op::name), OpKind::Binary) << str;
  WICK_BINARY_OPS(WICK_X)
#undef WICK_X
#define WICK_X(name, str, kind, mask, fn) EXPECT_EQ(op_kind(Op::name), OpKind::Compare) << str;
  WICK_COMPARE_OPS(WICK_X)
#undef WICK_X
}

// Marks exp on f32 unsupported on the CPU backend for the test's duration.
struct MarkUnsupported {
  Backend& be;
  Op op;
  uint32_t mask;
  MarkUnsupported(Backend& b, Op o, uint32_t m) : be(b), op(o), mask(m) { be.mark_unsupported(op, mask); }
  ~MarkUnsupported() { be.mark_unsupported(op, mask, false); }
};

TEST(OpTable, PartialBackendReportsUnsupported) {
  const Device cpu = Device::cpu();
  const Tensor x = Tensor::rand_uniform({3, 5}, DType::F32, -1, 1, cpu);
  const Tensor h = Tensor::rand_uniform({3, 5}, DType::F64, -1, 1, cpu);
  {
    MarkUnsupported m(backend_for(cpu), Op::Exp, dtype_bit(DType::F32));
    EXPECT_FALSE(supports(Op::Exp, DType::F32, cpu));
    EXPECT_TRUE(supports(Op::Exp, DType::F64, cpu));  // only the marked dtype
    try {
      (void)x.exp();
      ADD_FAILURE() << "exp on f32 ran on a backend that lacks it";
    } catch (const UnsupportedError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("[exp]"), std::string::npos) << what;
      EXPECT_NE(what.find("f32"), std::string::npos) << what;
      EXPECT_NE(what.find("cpu"), std::string::npos) << what;
    }
    EXPECT_NO_THROW((void)h.exp());
    int unsupported = 0, ran = 0;
    for (const check::Case& c : check::all_cases()) {
      if (c.op != Op::Exp) continue;
      const check::Outcome o = check::run_case(c, cpu, DType::F32, check::LayoutKind::Contiguous);
      EXPECT_EQ(o.status, check::Status::Unsupported) << o.message;
      unsupported += o.status == check::Status::Unsupported;
      const check::Outcome p = check::run_case(c, cpu, DType::F64, check::LayoutKind::Contiguous);
      EXPECT_EQ(p.status, check::Status::Pass) << p.message;
      ran += p.status == check::Status::Pass;
    }
    EXPECT_GT(unsupported, 0);
    EXPECT_GT(ran, 0);
  }
  EXPECT_TRUE(supports(Op::Exp, DType::F32, cpu));
  EXPECT_NO_THROW((void)x.exp());
}

}  // namespace
