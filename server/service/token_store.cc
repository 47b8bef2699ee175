#include "service/token_store.h"

#include <fstream>
#include <sstream>

#include <openssl/crypto.h>
#include <openssl/evp.h>

namespace grove::service {
namespace {

constexpr size_t kMinTokenChars = 16;

std::array<uint8_t, 32> Sha256(std::string_view data) {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr);
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseHexDigest(std::string_view hex, std::array<uint8_t, 32>* out) {
  if (hex.size() != 64) return false;
  for (size_t i = 0; i < 32; ++i) {
    const int hi = HexValue(hex[2 * i]);
    const int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kRead:
      return "read";
    case Role::kWrite:
      return "write";
    case Role::kAdmin:
      return "admin";
  }
  return "read";
}

std::string Sha256Hex(std::string_view data) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : Sha256(data)) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

StatusOr<TokenStore> TokenStore::Parse(std::string_view text, std::string_view source) {
  TokenStore store;
  std::istringstream in{std::string(text)};
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::string where = std::string(source) + ":" + std::to_string(line_no) + ": ";
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string role_text, credential, extra;
    if (!(fields >> role_text)) continue;  // blank or comment
    if (!(fields >> credential)) {
      return Status::InvalidArgument(where + "expected '<role> <token>'");
    }
    if (fields >> extra) {
      return Status::InvalidArgument(where + "expected '<role> <token>'; tokens contain no spaces");
    }
    Entry e{};
    if (role_text == "read") {
      e.role = Role::kRead;
    } else if (role_text == "write") {
      e.role = Role::kWrite;
    } else if (role_text == "admin") {
      e.role = Role::kAdmin;
    } else {
      return Status::InvalidArgument(where + "unknown role '" + role_text +
                                     "' (allowed: read, write, admin)");
    }
    if (credential.starts_with("sha256:")) {
      if (!ParseHexDigest(std::string_view(credential).substr(7), &e.digest)) {
        return Status::InvalidArgument(where + "sha256: must be followed by 64 hex digits");
      }
    } else {
      if (credential.size() < kMinTokenChars) {
        return Status::InvalidArgument(where + "token is shorter than " +
                                       std::to_string(kMinTokenChars) + " characters");
      }
      e.digest = Sha256(credential);
    }
    store.entries_.push_back(e);
  }
  if (store.entries_.empty()) {
    return Status::InvalidArgument(std::string(source) +
                                   ": no tokens (auth would refuse every call)");
  }
  return store;
}

StatusOr<TokenStore> TokenStore::LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("auth.tokens_file: cannot read '" + path + "'");
  std::ostringstream buf;
  buf << in.rdbuf();
  return Parse(buf.str(), path);
}

std::optional<Role> TokenStore::Lookup(std::string_view token) const {
  const Digest presented = Sha256(token);
  // Visit every entry and select with arithmetic, so neither the loop nor a branch depends on
  // which entry matched.
  int role = -1;
  for (const Entry& e : entries_) {
    const int equal = CRYPTO_memcmp(presented.data(), e.digest.data(), presented.size()) == 0;
    const int mask = -(equal & (role < 0));
    role = (mask & static_cast<int>(e.role)) | (~mask & role);
  }
  if (role < 0) return std::nullopt;
  return static_cast<Role>(role);
}

}  // namespace grove::service
