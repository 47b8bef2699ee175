#include "io/fault_backend.h"

#include <filesystem>
#include <utility>

#include "io/fault_internal.h"

namespace grove {
namespace {

// Directory of `path`, lexically normalised ("a/./b/f" -> "a/b").
std::string ParentDir(const std::string& path) {
  std::string parent = std::filesystem::path(path).lexically_normal().parent_path().string();
  return parent.empty() ? "." : parent;
}

// `dir` lexically normalised, without a trailing slash.
std::string NormalizeDir(const std::string& dir) {
  std::string s = std::filesystem::path(dir).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

FaultInjectionBackend::FaultInjectionBackend(std::shared_ptr<IoBackend> inner, uint64_t seed)
    : inner_(std::move(inner)), name_("fault(" + std::string(inner_->Name()) + ")"), rng_(seed) {}

FaultInjectionBackend::~FaultInjectionBackend() = default;

std::string_view FaultInjectionBackend::OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kRead:
      return "read";
    case OpKind::kWrite:
      return "write";
    case OpKind::kSync:
      return "sync";
    case OpKind::kAllocate:
      return "allocate";
    case OpKind::kTruncate:
      return "truncate";
    case OpKind::kCreate:
      return "create";
    case OpKind::kDelete:
      return "delete";
    case OpKind::kRename:
      return "rename";
    case OpKind::kSyncDir:
      return "syncdir";
  }
  return "?";
}

void FaultInjectionBackend::AddRule(const Rule& rule) {
  MutexLock lock(&mu_);
  rules_.push_back(RuleState{rule, 0});
}

void FaultInjectionBackend::ClearRules() {
  MutexLock lock(&mu_);
  rules_.clear();
}

void FaultInjectionBackend::CrashAfter(uint64_t n) {
  MutexLock lock(&mu_);
  crash_armed_ = true;
  crash_budget_ = n;
}

bool FaultInjectionBackend::crashed() const {
  MutexLock lock(&mu_);
  return crashed_;
}

uint64_t FaultInjectionBackend::mutating_ops() const {
  MutexLock lock(&mu_);
  return mutating_ops_;
}

void FaultInjectionBackend::SetObserver(std::function<void(const OpInfo&)> observer) {
  MutexLock lock(&mu_);
  observer_ = std::move(observer);
}

FaultInjectionBackend::Counters FaultInjectionBackend::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

FaultInjectionBackend::Verdict FaultInjectionBackend::BeginMutation(OpKind kind,
                                                                    const std::string& path,
                                                                    uint64_t offset, uint64_t len,
                                                                    const std::string& target) {
  uint64_t index;
  std::function<void(const OpInfo&)> observer;
  {
    MutexLock lock(&mu_);
    if (kind == OpKind::kWrite) ++counters_.writes;
    if (kind == OpKind::kSync) ++counters_.syncs;
    if (crashed_) return {CrashStatus()};
    index = mutating_ops_++;
    observer = observer_;
  }
  // Outside mu_ so that the observer can call CrashAfter() and friends; order_mu_ keeps the
  // calls in index order.
  if (observer) observer(OpInfo{kind, path, offset, len, index, target});
  MutexLock lock(&mu_);
  if (crash_armed_) {
    if (crash_budget_ == 0) {
      crashed_ = true;
      return {CrashStatus()};
    }
    --crash_budget_;
  }
  return MatchRules(kind, path, target);
}

FaultInjectionBackend::Verdict FaultInjectionBackend::MatchRules(OpKind kind,
                                                                 const std::string& path,
                                                                 const std::string& target) {
  Verdict verdict;
  for (RuleState& rs : rules_) {
    const Rule& rule = rs.rule;
    if (rule.kind != kind) continue;
    const bool path_matches =
        path.find(rule.path_contains) != std::string::npos ||
        (!target.empty() && target.find(rule.path_contains) != std::string::npos);
    if (!path_matches) continue;
    const uint64_t n = rs.matched++;
    if (n < rule.skip) continue;
    if (rule.count >= 0 && n - rule.skip >= static_cast<uint64_t>(rule.count)) continue;
    if (!verdict.status.ok()) continue;  // an earlier rule already fails this op
    std::string context(OpKindName(kind));
    context += ' ';
    context += path;
    context += " (injected)";
    verdict.status = Status::FromErrno(rule.error, context);
    verdict.short_write = rule.short_write && kind == OpKind::kWrite;
    ++counters_.injected_errors;
  }
  return verdict;
}

Status FaultInjectionBackend::CheckRead(const std::string& path) {
  MutexLock lock(&mu_);
  ++counters_.reads;
  if (crashed_) return CrashStatus();
  return MatchRules(OpKind::kRead, path, "").status;
}

Status FaultInjectionBackend::CheckAlive() const {
  MutexLock lock(&mu_);
  return crashed_ ? CrashStatus() : Status::Ok();
}

void FaultInjectionBackend::AppendUndo(FileNode* node, UndoRecord record) {
  MutexLock lock(&mu_);
  node->undo.push_back(std::move(record));
}

void FaultInjectionBackend::MarkSynced(FileNode* node) {
  MutexLock lock(&mu_);
  node->undo.clear();
}

void FaultInjectionBackend::RegisterFile(const File* file) {
  MutexLock lock(&mu_);
  live_files_.insert(file);
}

void FaultInjectionBackend::UnregisterFile(const File* file) {
  MutexLock lock(&mu_);
  live_files_.erase(file);
}

FaultFile* FaultInjectionBackend::FindFile(const File* file) {
  MutexLock lock(&mu_);
  if (live_files_.count(file) == 0) return nullptr;
  // Only FaultFiles register themselves, so the cast is exact.
  return static_cast<FaultFile*>(const_cast<File*>(file));
}

StatusOr<std::unique_ptr<File>> FaultInjectionBackend::OpenFile(const std::string& path,
                                                                const FileOptions& options) {
  GROVE_RETURN_IF_ERROR(CheckAlive());
  std::unique_ptr<File> inner_file;
  bool created = false;
  {
    MutexLock order(&order_mu_);
    if (options.create && !inner_->FileExists(path)) {
      Verdict verdict = BeginMutation(OpKind::kCreate, path, 0, 0);
      if (!verdict.status.ok()) return std::move(verdict.status);
      created = true;
    }
    GROVE_ASSIGN_OR_RETURN(inner_file, inner_->OpenFile(path, options));
  }
  FileOptions shadow_options;
  shadow_options.read_only = options.read_only;
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> shadow, inner_->OpenFile(path, shadow_options));

  std::shared_ptr<FileNode> node;
  {
    MutexLock lock(&mu_);
    std::shared_ptr<FileNode>& slot = nodes_[path];
    // A fresh node for a new file: a stale one could only come from a file deleted behind our
    // back, and its undo records must not be replayed onto the new file.
    if (slot == nullptr || created) {
      slot = std::make_shared<FileNode>();
      slot->path = path;
    }
    if (created) slot->create_unsynced = true;
    node = slot;
  }
  return std::unique_ptr<File>(new FaultFile(this, std::move(node), std::move(inner_file),
                                             std::move(shadow), options.direct));
}

Status FaultInjectionBackend::DeleteFile(const std::string& path) {
  MutexLock order(&order_mu_);
  Verdict verdict = BeginMutation(OpKind::kDelete, path, 0, 0);
  if (!verdict.status.ok()) return std::move(verdict.status);
  GROVE_RETURN_IF_ERROR(inner_->DeleteFile(path));
  MutexLock lock(&mu_);
  nodes_.erase(path);  // durable at once (see the header)
  return Status::Ok();
}

Status FaultInjectionBackend::RenameFile(const std::string& from, const std::string& to) {
  MutexLock order(&order_mu_);
  Verdict verdict = BeginMutation(OpKind::kRename, from, 0, 0, to);
  if (!verdict.status.ok()) return std::move(verdict.status);
  GROVE_RETURN_IF_ERROR(inner_->RenameFile(from, to));
  MutexLock lock(&mu_);
  nodes_.erase(to);  // the replaced file is gone for good
  auto it = nodes_.find(from);
  if (it != nodes_.end()) {
    std::shared_ptr<FileNode> node = std::move(it->second);
    nodes_.erase(it);
    node->path = to;
    nodes_[to] = std::move(node);
  }
  return Status::Ok();
}

Status FaultInjectionBackend::CreateDir(const std::string& path) {
  GROVE_RETURN_IF_ERROR(CheckAlive());
  return inner_->CreateDir(path);
}

Status FaultInjectionBackend::SyncDir(const std::string& path) {
  MutexLock order(&order_mu_);
  Verdict verdict = BeginMutation(OpKind::kSyncDir, path, 0, 0);
  if (!verdict.status.ok()) return std::move(verdict.status);
  GROVE_RETURN_IF_ERROR(inner_->SyncDir(path));
  const std::string dir = NormalizeDir(path);
  MutexLock lock(&mu_);
  for (auto& [name, node] : nodes_) {
    if (node->create_unsynced && ParentDir(node->path) == dir) node->create_unsynced = false;
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> FaultInjectionBackend::ListDir(const std::string& path) {
  GROVE_RETURN_IF_ERROR(CheckAlive());
  return inner_->ListDir(path);
}

bool FaultInjectionBackend::FileExists(const std::string& path) {
  if (!CheckAlive().ok()) return false;
  return inner_->FileExists(path);
}

std::unique_ptr<IoQueue> FaultInjectionBackend::AcquireQueue() {
  return std::make_unique<FaultQueue>(this, inner_->AcquireQueue());
}

}  // namespace grove
