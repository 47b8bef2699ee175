# Grove's front door. Every target is a thin wrapper over CMake/ctest or a script in scripts/.
#
#   make deps        install the Debian 12 packages (scripts/install-deps.sh)
#   make build       deps + configure + build everything (build/)
#   make test        deps + build + every test through ctest
#   make run         deps + build + start groved on config/grove.yaml
#   make format      clang-format every C++ file in place; make check-format only checks
#   make check-tsa   clang-14's thread-safety analysis of server/ and client/, as errors
#   make test-asan   the test suite under AddressSanitizer + UBSan (build-asan/)
#   make test-tsan   the test suite under ThreadSanitizer (build-tsan/); data races only: its
#                    lock-order detector is off (page latches are ordered by tree position, not
#                    by frame, so every latch-coupled descent looks like an inversion to it),
#                    and races inside the uninstrumented gRPC libraries are suppressed
#                    (tests/tsan.supp)
#   make test-deploy the deployment tests only (ctest -L deploy): image, monitoring stack, manifests
#   make torture     the kill -9 torture test (docs/reliability.md); CYCLES=N kills per wal.sync
#                    mode (default: the test's own, 20 for always, 8 for batch and none)
#   make conformance-all  the variant conformance suite with every case (GROVE_CONFORMANCE=all:
#                    every hln leaf size and hint width, SHORTCUT-BASE) and crash points at every
#                    IO (GROVE_CRASH_POINTS=all); docs/variants.md, docs/reliability.md
#   make bench       the benchmark suite (~15 min): btree vs RocksDB vs the device, writes
#                    docs/benchmarks.md and docs/img/bench-*.png (build-bench/, Release; not a test)
#   make bench-reference  the 10M-key reference run of docs/benchmarks.md (30-60 min)
#   make bench-treeline   TreeLine vs btree vs RocksDB at 64 B and 1 KiB in the paper's protocol
#                    (load, age, every run from a copy), wal.sync always and none at 4 and 16
#                    threads, a buffer_pool_share sweep, the factor analysis and insert
#                    forecasting (~3 h): docs/benchmarks.md's TreeLine section
#   make bench-treeline-cache OLD_BENCH=...  TreeLine's record cache before and after, under perf
#   make bench-treeline-split [OLD_BENCH=...]  TreeLine's memory split fixed and free, dirty_share,
#                    1 KiB in the paper's setting, write-back batching in turns (~1 h)
#   make bench-aha        AHA-tree (down- and side-split) vs btree and RocksDB on a hot range:
#                    load, range searches over time, hot writes, searches again (~20 min)
#   make bench-aulid      AULID vs btree and RocksDB at 50M keys on sparse, osm and lognormal keys,
#                    the smallest pool and four budgets, the paper's W1-W6 and sorted appends
#                    (~45 min at DURATION=4): docs/benchmarks.md's AULID section
#   make bench-cluster    YCSB C and A through etcd:// routing against 1 and 3 groved nodes beside
#                    one groved without cluster mode, then a 1M-key range moved under YCSB A
#                    (~12 min): docs/benchmarks.md's cluster section
#   make bench-advisor    grovectl advise against the truth on six workloads: each traced through
#                    groved, advised at a quarter of the size, every variant run at full size
#                    twice (~55 min; TRUTH=0 redoes the advice only, ~8 min): docs/benchmarks.md's
#                    advisor section
#   make bench-scale      btree, hln and RocksDB at 10^7, 10^8 and 10^9 records of 8-byte keys and
#                    values, 1 GiB budget: load, cold Get beside the device, YCSB E, durable
#                    inserts, recovery after kill -9, and for Grove an online backup through
#                    groved and its restore (hours at 10^9; SIZES=1e7 for a first look; ~60 GB of
#                    disk at 10^9, backup included): docs/benchmarks.md "At a billion keys"
#   make bench-write-tails  durable inserts (wal.sync always) of 200K 100-byte records at budgets
#                    of 16 MiB to 1 GiB, btree and hln beside RocksDB: throughput, p99, p999 and
#                    what the writers waited for (~15 min): docs/bench-data/scale-tails.md
#   make fuzz        every libFuzzer target for FUZZ_SECONDS (default 60) each, clang-14 + ASan/UBSan
#                    (build-fuzz/, scripts/fuzz.sh); findings go to tests/fuzz/regressions/

BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=
CXX_FILES = $(shell git ls-files '*.cc' '*.h' 2>/dev/null)

.PHONY: deps configure build test run format check-format check-tsa test-asan test-tsan clean
.PHONY: bench-build bench bench-reference bench-treeline bench-treeline-cache bench-treeline-split bench-aulid bench-aha bench-scan bench-cluster bench-advisor bench-scale bench-scale-get bench-write-tails fuzz torture conformance-all test-replicated-faults

deps:
	bash scripts/install-deps.sh

# scripts/configure.sh: a configure that fails (a package missing) removes its cache, so the next
# attempt starts clean instead of stopping at "loading 'build.ninja'".
configure: deps
	scripts/configure.sh $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

run: build
	$(BUILD_DIR)/server/groved --config config/grove.yaml

format:
	clang-format -i $(CXX_FILES)

check-format:
	clang-format --dry-run --Werror $(CXX_FILES)

# Clang-14's thread-safety analysis over server/ and client/, as errors, with each file's flags
# from $(BUILD_DIR)/compile_commands.json (scripts/check_tsa.py; -fsyntax-only: no code is
# generated, about three minutes on two cores after the build).
check-tsa: build
	/usr/bin/python3 scripts/check_tsa.py --build $(BUILD_DIR) --jobs $(JOBS)

test-asan: deps
	scripts/configure.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DGROVE_SANITIZE=address,undefined
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

test-tsan: deps
	scripts/configure.sh build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGROVE_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && \
	  TSAN_OPTIONS="detect_deadlocks=0 suppressions=$(CURDIR)/tests/tsan.supp $(TSAN_OPTIONS)" \
	  ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

.PHONY: test-deploy
test-deploy: deps build
	cd $(BUILD_DIR) && ctest --output-on-failure -L deploy $(CTEST_ARGS)

# Torture runs its binary directly, not through ctest, so that a long run (CYCLES=1000) is not cut
# off by the test's ctest timeout. Its JSON lines go to $GROVE_RELIABILITY_REPORT when that is set.
CYCLES ?=

torture: deps build
	$(if $(CYCLES),GROVE_TORTURE_CYCLES=$(CYCLES)) $(BUILD_DIR)/tests/reliability/torture_test

# The binaries run directly: ctest lists each test case when it is built, without the long list.
conformance-all: deps build
	GROVE_CONFORMANCE=all $(BUILD_DIR)/tests/conformance/conformance_test
	GROVE_CONFORMANCE=all GROVE_CRASH_POINTS=all $(BUILD_DIR)/tests/reliability/crash_points_test

# Replicated ranges under 100 faults (docs/reliability.md, "Replicated ranges under faults");
# CI runs 4 of them. FAULTS=N sets the number.
FAULTS ?= 100
test-replicated-faults: deps build
	GROVE_REPLICATED_FAULTS=$(FAULTS) $(BUILD_DIR)/tests/cluster/replicated_faults_test

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan build-fuzz

# Benchmarks build in Release without tests, in their own directory, and keep their data there.
BENCH_BUILD_DIR ?= build-bench
BENCH_ENV = BENCH=$(BENCH_BUILD_DIR)/client/bench/grove-bench GROVED=$(BENCH_BUILD_DIR)/server/groved \
            DATA=$(BENCH_BUILD_DIR)/data

bench-build: deps
	scripts/configure.sh $(BENCH_BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DGROVE_BUILD_TESTS=OFF
	cmake --build $(BENCH_BUILD_DIR) -j $(JOBS) --target grove-bench groved grovectl

bench: bench-build
	$(BENCH_ENV) scripts/bench-suite.sh

bench-reference: bench-build
	$(BENCH_ENV) scripts/bench-reference.sh

bench-treeline: bench-build
	$(BENCH_ENV) RECORDS=4M VALUE=56 scripts/bench-treeline.sh
	$(BENCH_ENV) RECORDS=1M VALUE=1016 scripts/bench-treeline.sh
	$(BENCH_ENV) scripts/bench-treeline-factors.sh
	/usr/bin/python3 scripts/treeline_report.py --section docs/bench-data > docs/bench-data/treeline.md
	for t in 56-always-t4 56-none-t16 1016-always-t4 1016-none-t16; do \
	  /usr/bin/python3 scripts/plot.py docs/bench-data/treeline-$$t.jsonl --out docs/img \
	  --prefix treeline-$$t; done
	/usr/bin/python3 scripts/bench_report.py

# The record cache before and after a change: OLD_BENCH names a grove-bench built from the older
# commit (its bench-build); needs the starting databases of bench-treeline and linux-perf.
bench-treeline-cache: bench-build
	$(BENCH_ENV) OLD_BENCH=$(OLD_BENCH) scripts/bench-treeline-cache.sh

# TreeLine's memory split fixed and free, a dirty_share sweep, the paper's setting at 1 KiB, and
# (with OLD_BENCH, a grove-bench from an older commit) write-back batching in turns (~1 h).
bench-treeline-split: bench-build
	$(BENCH_ENV) OLD_BENCH=$(OLD_BENCH) scripts/bench-treeline-split.sh
	/usr/bin/python3 scripts/bench_report.py

bench-aulid: bench-build
	$(BENCH_ENV) scripts/bench-aulid.sh

bench-aha: bench-build
	$(BENCH_ENV) scripts/bench-aha.sh

bench-scan: bench-build
	$(BENCH_ENV) scripts/bench-scan.sh

bench-cluster: bench-build
	$(BENCH_ENV) scripts/bench-cluster.sh

bench-advisor: bench-build
	$(BENCH_ENV) GROVECTL=$(BENCH_BUILD_DIR)/client/grovectl scripts/bench-advisor.sh

# Cold Get of btree and hln side by side at one size (SIZE, default 1e9), beside the device over
# each engine's data file and over a smaller file.
bench-scale-get: bench-build
	BIN=$(BENCH_BUILD_DIR)/client/bench/grove-bench scripts/bench-scale-get.sh
	python3 scripts/scale_get_report.py docs/bench-data/scale-get.jsonl > docs/bench-data/scale-get.md

bench-scale: bench-build
	BIN=$(BENCH_BUILD_DIR)/client/bench/grove-bench scripts/bench-scale.sh
	python3 scripts/scale_report.py docs/bench-data/scale.jsonl docs/bench-data/scale-disk.jsonl \
	  docs/bench-data/scale-admin.jsonl > docs/bench-data/scale-tables.md
	python3 scripts/scale_plot.py docs/bench-data/scale.jsonl docs/bench-data/scale-disk.jsonl \
	  docs/bench-data/scale-admin.jsonl --out docs/img/scale.png

bench-write-tails: bench-build
	BIN=$(BENCH_BUILD_DIR)/client/bench/grove-bench scripts/bench-write-tails.sh
	python3 scripts/write_tails_report.py docs/bench-data/scale-tails.jsonl \
	  > docs/bench-data/scale-tails-table.md

# Fuzzing builds with clang-14 in its own directory (scripts/fuzz.sh configures it).
FUZZ_SECONDS ?= 60

fuzz: deps
	JOBS=$(JOBS) scripts/fuzz.sh --seconds $(FUZZ_SECONDS)
