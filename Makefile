# Grove's front door. Every target is a thin wrapper over CMake/ctest or a script in scripts/.
#
#   make deps        install the Debian 12 packages (scripts/install-deps.sh)
#   make build       configure and build everything (build/)
#   make test        deps + build + every test through ctest
#   make run         deps + build + start groved on config/grove.yaml
#   make format      clang-format every C++ file in place; make check-format only checks
#   make test-asan   the test suite under AddressSanitizer + UBSan (build-asan/)
#   make test-tsan   the test suite under ThreadSanitizer (build-tsan/)
#   make test-deploy the deployment tests only (ctest -L deploy): image, monitoring stack, manifests

BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
CXX_FILES = $(shell git ls-files '*.cc' '*.h' 2>/dev/null)

.PHONY: deps configure build test run format check-format test-asan test-tsan clean

deps:
	bash scripts/install-deps.sh

$(BUILD_DIR)/CMakeCache.txt:
	cmake -S . -B $(BUILD_DIR) $(GENERATOR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: $(BUILD_DIR)/CMakeCache.txt

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: deps build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

run: deps build
	$(BUILD_DIR)/server/groved --config config/grove.yaml

format:
	clang-format -i $(CXX_FILES)

check-format:
	clang-format --dry-run --Werror $(CXX_FILES)

test-asan: deps
	cmake -S . -B build-asan $(GENERATOR) -DCMAKE_BUILD_TYPE=Debug -DGROVE_SANITIZE=address,undefined
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

test-tsan: deps
	cmake -S . -B build-tsan $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGROVE_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

.PHONY: test-deploy
test-deploy: deps build
	cd $(BUILD_DIR) && ctest --output-on-failure -L deploy $(CTEST_ARGS)

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan
