#pragma once

// Calls straight at one groved, without routing: what a node itself answers (its refusals, the
// leader it names, its trailers). For the replicated-range tests.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "grove/client/client.h"
#include "grove/v1/kv.grpc.pb.h"
#include "grove/v1/metadata.h"

namespace grove::testing {

inline std::string Trailer(const grpc::ClientContext& ctx, const std::string& key) {
  const auto& md = ctx.GetServerTrailingMetadata();
  auto it = md.find(key);
  return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
}

// A Get at `address` with `metadata`; its trailers stay readable in `ctx`.
inline grpc::Status GetAt(const std::string& address, const std::string& key,
                          grpc::ClientContext* ctx, v1::GetResponse* resp,
                          std::chrono::seconds deadline = std::chrono::seconds(5)) {
  auto kv = v1::KV::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  v1::GetRequest req;
  req.set_key(key);
  return kv->Get(ctx, req, resp);
}

// A Put at `address`; client::NotApplied() holds for a refusal that applied nothing.
inline grpc::Status PutAt(const std::string& address, const std::string& key,
                          const std::string& value) {
  auto kv = v1::KV::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::PutRequest req;
  req.set_key(key);
  req.set_value(value);
  v1::PutResponse resp;
  grpc::Status s = kv->Put(&ctx, req, &resp);
  if (!s.ok() && Trailer(ctx, v1::kNotAppliedMetadata) == "1") {
    return grpc::Status(s.error_code(), s.error_message(), client::kNotAppliedDetails);
  }
  return s;
}

}  // namespace grove::testing
