#include "service/call_metadata.h"

#include <charconv>

namespace grove::service {

uint64_t CallMetadata::ClientNumber(std::string_view key) const {
  const std::optional<std::string_view> text = Client(key);
  uint64_t n = 0;
  if (!text || std::from_chars(text->data(), text->data() + text->size(), n).ec != std::errc()) {
    return 0;
  }
  return n;
}

std::optional<std::string_view> ContextMetadata::Client(std::string_view key) const {
  const auto& md = context_->client_metadata();
  const auto it = md.find(grpc::string_ref(key.data(), key.size()));
  if (it == md.end()) return std::nullopt;
  return std::string_view(it->second.data(), it->second.size());
}

void ContextMetadata::AddTrailer(const std::string& key, const std::string& value) {
  context_->AddTrailingMetadata(key, value);
}

}  // namespace grove::service
