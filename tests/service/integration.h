#pragma once

// Shared pieces of the groved integration tests: a fixture that starts groved in a temp dir, and
// helpers to call it through raw stubs (so that tests see exactly what the server answers).

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>

#include "grove/v1/kv.grpc.pb.h"

#include "grpc/health/v1/health.grpc.pb.h"
#include "metrics/http_get.h"
#include "service/groved_process.h"
#include "testutil/temp_dir.h"

namespace grove::testing {

inline std::unique_ptr<grpc::ClientContext> Ctx(
    std::chrono::milliseconds timeout = std::chrono::seconds(10), const std::string& token = "") {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  return ctx;
}

// 8-byte big-endian keys, as grovectl's u64 format writes them.
inline std::string U64Key(uint64_t v) {
  std::string k(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) k[i] = static_cast<char>(v & 0xff);
  return k;
}

inline std::shared_ptr<grpc::Channel> Plaintext(const std::string& address,
                                                grpc::ChannelArguments args = {}) {
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

class GrovedTest : public ::testing::Test {
 protected:
  // Starts groved with `yaml` appended to the generated config; fails the test if it cannot.
  void StartGroved(const std::string& yaml = "", std::vector<std::string> extra_args = {}) {
    GrovedConfig c;
    c.data_dir = dir_.Sub("data");
    c.yaml = yaml;
    c.extra_args = std::move(extra_args);
    groved_ = GrovedProcess::Start(dir_.path(), c);
    ASSERT_NE(groved_, nullptr);
    channel_ = Plaintext(groved_->address());
    kv_ = v1::KV::NewStub(channel_);
    health_ = grpc::health::v1::Health::NewStub(channel_);
  }

  // SIGTERM and wait for a clean exit.
  void StopGroved() {
    if (!groved_) return;
    groved_->Signal(SIGTERM);
    std::optional<int> status = groved_->Wait(std::chrono::seconds(60));
    ASSERT_TRUE(status.has_value()) << "groved did not stop";
    EXPECT_EQ(*status, 0) << groved_->Log();
  }

  grpc::Status Put(const std::string& key, const std::string& value) {
    v1::PutRequest req;
    req.set_key(key);
    req.set_value(value);
    v1::PutResponse resp;
    return kv_->Put(Ctx().get(), req, &resp);
  }

  // The value of `key`; "<absent>" when not found; "<CODE: message>" on an error.
  std::string Get(const std::string& key) {
    v1::GetRequest req;
    req.set_key(key);
    v1::GetResponse resp;
    grpc::Status s = kv_->Get(Ctx().get(), req, &resp);
    if (!s.ok()) return "<" + std::to_string(s.error_code()) + ": " + s.error_message() + ">";
    return resp.found() ? resp.value() : "<absent>";
  }

  std::string MetricsText() { return HttpGet(groved_->metrics_port(), "/metrics").body; }

  TempDir dir_;
  std::unique_ptr<GrovedProcess> groved_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::KV::Stub> kv_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

}  // namespace grove::testing
