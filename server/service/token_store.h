#pragma once

// Bearer tokens and their roles, loaded from the file named by auth.tokens_file.
//
// File format: one token per line, "<role> <token>" or "<role> sha256:<64 hex digits>" (the SHA-256
// of the token, so that the file need not hold the secret). '#' starts a comment; blank lines are
// ignored. Roles: read (Get, BatchGet, Scan, Stats), write (every KV call) and admin (every call,
// grove.v1.Admin's Backup too). A plaintext token must be at least 16 characters.
//
// Only SHA-256 digests are kept in memory. Lookup hashes the presented token and compares its
// digest with every stored digest in constant time, without stopping at a match, so the time taken
// does not reveal which token (or how much of one) matched.
//
// Thread safety: immutable after loading; Lookup may run concurrently.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grove/status.h"

namespace grove::service {

// Ordered: a role allows everything the roles before it allow.
enum class Role { kRead, kWrite, kAdmin };

std::string_view RoleName(Role role);

// SHA-256 of `data` as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

class TokenStore {
 public:
  // `source` names the text in errors ("tokens:3: ...").
  static StatusOr<TokenStore> Parse(std::string_view text, std::string_view source);
  static StatusOr<TokenStore> LoadFile(const std::string& path);

  // The role of `token`, or nullopt when no stored digest matches.
  std::optional<Role> Lookup(std::string_view token) const;

  size_t size() const { return entries_.size(); }

 private:
  using Digest = std::array<uint8_t, 32>;
  struct Entry {
    Digest digest;
    Role role;
  };

  std::vector<Entry> entries_;
};

}  // namespace grove::service
