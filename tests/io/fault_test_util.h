#pragma once

// Fixture for the fault-injection tests: a FaultInjectionBackend over each real backend.

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "io/fault_backend.h"
#include "io/io_test_util.h"
#include "testutil/temp_dir.h"

namespace grove::testing {

class FaultFixture : public ::testing::TestWithParam<std::string> {
 protected:
  static constexpr uint64_t kSeed = 20240613;
  using Backend = FaultInjectionBackend;

  void SetUp() override {
    auto inner = MakeBackend(GetParam());
    if (!inner.ok())
      GTEST_SKIP() << "io_uring cannot be set up here: " << inner.status().ToString();
    inner_ = *inner;
    fault_ = std::make_shared<FaultInjectionBackend>(inner_, kSeed);
  }

  std::unique_ptr<File> Open(const std::string& name, bool direct = false, bool create = true) {
    FileOptions o;
    o.create = create;
    o.direct = direct;
    auto file = fault_->OpenFile(dir_.Sub(name), o);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  // One op through a fresh queue of the fault backend; returns the completed op.
  IoOp RunOne(IoOp op) {
    auto queue = fault_->AcquireQueue();
    queue->Push(&op);
    queue->Submit();
    queue->Wait(&op);
    EXPECT_TRUE(op.done);
    return op;
  }

  TempDir dir_;
  std::shared_ptr<IoBackend> inner_;
  std::shared_ptr<FaultInjectionBackend> fault_;
};

}  // namespace grove::testing
