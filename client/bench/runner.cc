#include "bench/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "bench/key_set.h"
#include "bench/runner_shared.h"

namespace grove::bench {

void OpStats::Merge(const OpStats& o) {
  latency.Merge(o.latency);
  ok += o.ok;
  not_found += o.not_found;
  errors += o.errors;
  scan_entries += o.scan_entries;
}

void PhaseResult::Merge(const PhaseResult& o) {
  ops += o.ops;
  seconds += o.seconds;
  for (int i = 0; i < kNumOpTypes; ++i) per_op[i].Merge(o.per_op[i]);
}

Runner::Runner(Target* target, KeySpace* keys, const ValueGen* values, const RunSettings& settings)
    : target_(target), keys_(keys), values_(values), settings_(settings) {}

Status Runner::EnsureSessions() {
  while (sessions_.size() < settings_.threads) {
    GROVE_ASSIGN_OR_RETURN(auto s, target_->NewSession());
    sessions_.push_back(std::move(s));
  }
  return Status::Ok();
}

PhaseResult Runner::RunPhase(const PhaseSpec& phase, int phase_index, bool measured,
                             Shared* shared) {
  const uint32_t threads = settings_.threads;
  uint64_t ops = phase.ops;
  double seconds = phase.seconds;
  if (!measured) {
    ops = settings_.warmup_ops;
    seconds = settings_.warmup_seconds;
  } else if (ops == 0 && seconds == 0) {
    ops = settings_.default_ops;
    seconds = settings_.default_seconds;
  }
  const uint64_t start = NowNanos();
  const uint64_t deadline = seconds > 0 ? start + static_cast<uint64_t>(seconds * 1e9)
                                        : std::numeric_limits<uint64_t>::max();
  std::atomic<int64_t> budget(ops > 0 ? static_cast<int64_t>(ops)
                                      : std::numeric_limits<int64_t>::max());
  shared->phase.store(phase_index);
  shared->phase_ops.store(ops);
  shared->phase_deadline_ns.store(seconds > 0 ? deadline : 0);
  shared->phase_done.store(0);
  shared->phase_start_ns.store(start);
  shared->measuring.store(measured);

  const uint64_t run_seed = settings_.seed * 1000003 + run_counter_;
  std::vector<PhaseResult> per_thread(threads);
  std::vector<std::thread> workers;
  for (uint32_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      Rng rng(run_seed * 7919 + t * 104729 + static_cast<uint64_t>(phase_index) * 31 +
              (measured ? 1 : 0));
      auto chooser = KeyChooser::New(phase.distribution, keys_, &zeta_, run_seed);
      ScanLengthChooser scan_len(phase.scan, &zeta_);
      const OpChooser op_chooser(phase.mix);
      Session* session = sessions_[t].get();
      PhaseResult& r = per_thread[t];
      const double mean_gap_ns = settings_.rate > 0 ? 1e9 * threads / settings_.rate : 0;
      uint64_t intended = NowNanos();
      char key[8];
      char end_key[8];
      std::string value;
      while (!shared->stop.load(std::memory_order_relaxed)) {
        if (budget.fetch_sub(1, std::memory_order_relaxed) <= 0) break;
        uint64_t t0;
        if (mean_gap_ns > 0) {
          intended += static_cast<uint64_t>(rng.Exponential(mean_gap_ns));
          if (intended >= deadline) break;
          SleepUntil(intended);
          t0 = intended;
        } else {
          t0 = NowNanos();
          if (t0 >= deadline) break;
        }
        OpType type = op_chooser.Next(rng);
        Status s;
        bool found = true;
        uint64_t entries = 0;
        switch (type) {
          case OpType::kRead:
            EncodeKey(chooser->Next(rng), key);
            s = session->Read(Slice(key, 8), &value, &found);
            break;
          case OpType::kUpdate:
            EncodeKey(chooser->Next(rng), key);
            s = session->Write(Slice(key, 8), values_->Next(rng));
            break;
          case OpType::kInsert: {
            uint64_t index = 0;
            if (keys_->ClaimInsert(&index)) {
              EncodeKey(keys_->key(index), key);
              s = session->Write(Slice(key, 8), values_->Next(rng));
              if (s.ok()) keys_->AckInsert();
            } else {
              // The key set is used up: keep the mix's write share with an update.
              shared->exhausted.fetch_add(1, std::memory_order_relaxed);
              type = OpType::kUpdate;
              EncodeKey(chooser->Next(rng), key);
              s = session->Write(Slice(key, 8), values_->Next(rng));
            }
            break;
          }
          case OpType::kScan: {
            const uint64_t first = chooser->Next(rng);
            EncodeKey(first, key);
            if (phase.scan.width > 0) {
              const uint64_t last =
                  first > UINT64_MAX - phase.scan.width ? UINT64_MAX : first + phase.scan.width;
              EncodeKey(last, end_key);
              s = session->Scan(Slice(key, 8), Slice(end_key, 8), UINT32_MAX, &entries);
            } else {
              s = session->Scan(Slice(key, 8), Slice(), scan_len.Next(rng), &entries);
            }
            break;
          }
          case OpType::kRmw:
            EncodeKey(chooser->Next(rng), key);
            s = session->Read(Slice(key, 8), &value, &found);
            if (s.ok()) s = session->Write(Slice(key, 8), values_->Next(rng));
            break;
          case OpType::kDelete:
            EncodeKey(chooser->Next(rng), key);
            s = session->Delete(Slice(key, 8));
            break;
          case OpType::kBatchRead:
          case OpType::kBatchWrite:
          case OpType::kDeleteRange:
            s = Status::Internal(std::string(OpTypeName(type)) + " is drawn only by replays");
            break;
        }
        CountOp(type, s, found, entries, NowNanos() - t0, measured, &r, shared);
      }
    });
  }
  for (auto& w : workers) w.join();
  PhaseResult result;
  result.name = phase.name;
  result.distribution = DistributionName(phase.distribution);
  for (const auto& r : per_thread) result.Merge(r);
  result.seconds = static_cast<double>(NowNanos() - start) * 1e-9;
  return result;
}

void Runner::CountOp(OpType type, const Status& s, bool found, uint64_t entries,
                     uint64_t latency_ns, bool measured, PhaseResult* r, Shared* shared) const {
  OpStats& st = r->per_op[static_cast<int>(type)];
  if (!s.ok()) {
    ++st.errors;
    shared->Fail(s);
    if (shared->errors.load() >= settings_.max_errors) shared->stop.store(true);
  } else if (!found) {
    ++st.not_found;
  } else {
    ++st.ok;
  }
  st.scan_entries += entries;
  st.latency.Record(latency_ns);
  if (measured) {
    shared->interval_buckets[LatencyHistogram::BucketOf(latency_ns)].fetch_add(
        1, std::memory_order_relaxed);
  }
  ++r->ops;
  shared->phase_done.fetch_add(1, std::memory_order_relaxed);
  if (measured) shared->completed.fetch_add(1, std::memory_order_relaxed);
}

StatusOr<RunResult> Runner::RunWorkload(const WorkloadSpec& workload) {
  GROVE_RETURN_IF_ERROR(ValidateWorkload(workload));
  GROVE_RETURN_IF_ERROR(EnsureSessions());
  ++run_counter_;
  for (const auto& p : workload.phases) {
    if (KeyChooser::NeedsSortedKeys(p.distribution) && !keys_->computed()) keys_->BuildSorted();
  }
  RunResult run;
  run.workload = workload.name;
  run.description = workload.description;
  run.distribution = DistributionName(workload.phases[0].distribution);
  Shared shared;
  shared.label = workload.name + " " + run.distribution;
  Monitor monitor(&shared, settings_.timeline_interval, settings_.progress,
                  static_cast<int>(workload.phases.size()), target_, settings_.timeline_counters);
  if (settings_.warmup_ops > 0 || settings_.warmup_seconds > 0) {
    RunPhase(workload.phases[0], 0, /*measured=*/false, &shared);
    shared.stop.store(false);
  }
  const uint64_t exhausted_before = shared.exhausted.load();
  GROVE_ASSIGN_OR_RETURN(run.before, target_->Stats());
  for (size_t i = 0; i < workload.phases.size() && !shared.stop.load(); ++i) {
    run.phases.push_back(RunPhase(workload.phases[i], static_cast<int>(i), true, &shared));
    run.total.Merge(run.phases.back());
  }
  shared.measuring.store(false);
  monitor.Stop();
  GROVE_ASSIGN_OR_RETURN(run.after, target_->Stats());
  run.total.name = "total";
  run.total.distribution = run.distribution;
  run.timeline = monitor.timeline();
  run.errors = shared.errors.load();
  run.first_error = shared.FirstError();
  run.inserts_exhausted = shared.exhausted.load() - exhausted_before;
  return run;
}

void Runner::RunWriteThreads(uint64_t n, bool batched, uint64_t salt,
                             const std::function<uint64_t(uint64_t, Rng&)>& pick,
                             PhaseResult* result, Shared* shared) {
  const uint32_t threads = settings_.threads;
  const uint64_t step = batched ? std::max<uint32_t>(1, settings_.batch_size) : 1;
  std::atomic<uint64_t> next(0);
  std::vector<PhaseResult> per_thread(threads);
  std::vector<std::thread> workers;
  const uint64_t start = NowNanos();
  for (uint32_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      Rng rng(settings_.seed * 6151 + t + salt);
      Session* session = sessions_[t].get();
      OpStats& st = per_thread[t].per_op[static_cast<int>(OpType::kInsert)];
      std::vector<std::pair<std::string, std::string>> batch;
      char key[8];
      while (!shared->stop.load(std::memory_order_relaxed)) {
        const uint64_t first = next.fetch_add(step, std::memory_order_relaxed);
        if (first >= n) break;
        const uint64_t last = std::min(n, first + step);
        const uint64_t t0 = NowNanos();
        Status s;
        if (batched) {
          batch.clear();
          for (uint64_t i = first; i < last; ++i) {
            batch.emplace_back(EncodeKey(keys_->key(pick(i, rng))),
                               std::string(values_->Next(rng)));
          }
          s = session->WriteBatch(batch);
        } else {
          EncodeKey(keys_->key(pick(first, rng)), key);
          s = session->Write(Slice(key, 8), values_->Next(rng));
        }
        // Batched writes record one latency per batch; counts stay per key.
        st.latency.Record(NowNanos() - t0);
        if (s.ok()) {
          st.ok += last - first;
        } else {
          st.errors += last - first;
          shared->Fail(s);
          if (shared->errors.load() >= settings_.max_errors) shared->stop.store(true);
        }
        per_thread[t].ops += last - first;
        shared->phase_done.fetch_add(last - first, std::memory_order_relaxed);
        shared->completed.fetch_add(last - first, std::memory_order_relaxed);
      }
    });
  }
  for (auto& w : workers) w.join();
  for (const auto& r : per_thread) result->Merge(r);
  result->seconds = static_cast<double>(NowNanos() - start) * 1e-9;
}

Status Runner::RunBulk(PhaseResult* result) {
  // Db::BulkLoad takes sorted input; the key set is in insertion order. Computed keys are known
  // in sorted order without a copy; a vector of keys is sorted into a copy that lives only as
  // long as the load (so that it does not count in the runs after it).
  std::vector<uint64_t> sorted;
  if (!keys_->computed()) {
    sorted.resize(keys_->loaded());
    for (uint64_t i = 0; i < sorted.size(); ++i) sorted[i] = keys_->key(i);
    std::sort(sorted.begin(), sorted.end());
  }
  const uint64_t n = keys_->loaded();
  Rng rng(settings_.seed * 6151);
  uint64_t i = 0;
  const uint64_t start = NowNanos();
  Status s = target_->BulkLoad([&](std::string* k, std::string* v) {
    if (i == n) return false;
    *k = EncodeKey(keys_->computed() ? keys_->sorted_key(i) : sorted[i]);
    ++i;
    v->assign(values_->Next(rng));
    return true;
  });
  const uint64_t end = NowNanos();
  result->seconds = static_cast<double>(end - start) * 1e-9;
  result->ops = i;
  OpStats& st = result->per_op[static_cast<int>(OpType::kInsert)];
  if (s.ok()) st.ok = i;
  return s;
}

StatusOr<RunResult> Runner::RunLoad() {
  static const char* kMethodNames[] = {"put", "batch", "bulk"};
  RunResult run;
  run.workload = "load";
  run.is_load = true;
  run.load_method = kMethodNames[static_cast<int>(settings_.load_method)];
  run.description =
      "LOAD: insert " + std::to_string(keys_->loaded()) + " records (" + run.load_method + ")";
  run.distribution = "-";
  ++run_counter_;
  GROVE_RETURN_IF_ERROR(EnsureSessions());
  GROVE_ASSIGN_OR_RETURN(run.before, target_->Stats());
  Shared shared;
  shared.label = "load";
  PhaseResult phase;
  phase.name = "load";
  phase.distribution = "-";
  {
    Monitor monitor(&shared, settings_.timeline_interval, settings_.progress, 1);
    shared.phase_ops.store(keys_->loaded());
    shared.phase_start_ns.store(NowNanos());
    shared.measuring.store(true);
    if (settings_.load_method == LoadMethod::kBulk) {
      Status s = RunBulk(&phase);
      if (!s.ok()) {
        shared.Fail(s);
        phase.per_op[static_cast<int>(OpType::kInsert)].errors = 1;
      }
    } else {
      RunWriteThreads(
          keys_->loaded(), settings_.load_method == LoadMethod::kBatch, /*salt=*/0,
          [](uint64_t i, Rng&) { return i; }, &phase, &shared);
    }
    shared.measuring.store(false);
    monitor.Stop();
    run.timeline = monitor.timeline();
  }
  GROVE_RETURN_IF_ERROR(FinishWriteRun(&shared, std::move(phase), &run));
  return run;
}

StatusOr<RunResult> Runner::RunAge(uint64_t updates) {
  RunResult run;
  run.workload = "age";
  run.is_load = true;
  run.load_method = "batch";
  run.description = "AGE: " + std::to_string(updates) + " uniform updates of loaded records";
  run.distribution = "uniform";
  ++run_counter_;
  GROVE_RETURN_IF_ERROR(EnsureSessions());
  GROVE_ASSIGN_OR_RETURN(run.before, target_->Stats());
  Shared shared;
  shared.label = "age";
  PhaseResult phase;
  phase.name = "age";
  phase.distribution = "uniform";
  const uint64_t loaded = keys_->loaded();
  {
    Monitor monitor(&shared, settings_.timeline_interval, settings_.progress, 1);
    shared.phase_ops.store(updates);
    shared.phase_start_ns.store(NowNanos());
    shared.measuring.store(true);
    if (loaded > 0) {
      RunWriteThreads(
          updates, /*batched=*/true, /*salt=*/7919 * run_counter_,
          [loaded](uint64_t, Rng& rng) { return rng.Uniform(loaded); }, &phase, &shared);
    }
    shared.measuring.store(false);
    monitor.Stop();
    run.timeline = monitor.timeline();
  }
  GROVE_RETURN_IF_ERROR(FinishWriteRun(&shared, std::move(phase), &run));
  return run;
}

Status Runner::FinishWriteRun(Shared* shared, PhaseResult phase, RunResult* run) {
  if (settings_.settle_after_load && shared->errors.load() == 0) {
    const uint64_t t0 = NowNanos();
    GROVE_RETURN_IF_ERROR(target_->Settle());
    run->settle_seconds = static_cast<double>(NowNanos() - t0) * 1e-9;
  }
  GROVE_ASSIGN_OR_RETURN(run->after, target_->Stats());
  run->phases.push_back(phase);
  run->total = std::move(phase);
  run->total.name = "total";
  run->errors = shared->errors.load();
  run->first_error = shared->FirstError();
  return Status::Ok();
}

}  // namespace grove::bench
