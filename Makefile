# Developer entry points. `make test` is the README's test command: it installs
# the test requirements, builds the C++ core, unit tests and examples, and runs
# ctest and pytest against the freshly built extension.
PYTHON ?= python3
BUILD ?= build/dev
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: test build lint cpp-test py-test bench clean sanitize

CXX_SOURCES = $(shell git ls-files 'src/*.h' 'src/*.cpp' 'include/*.h' 'python/src/*.cpp' 'python/src/*.h' \
                'tests/cpp/*.cpp' 'tests/cpp/*.h' 'examples/cpp/*.cpp' 'device/*.h')

test: build lint cpp-test py-test

# Formatting is mechanical: unformatted code fails the test command (and CI).
lint:
	clang-format --dry-run --Werror $(CXX_SOURCES)
	$(PYTHON) -m ruff check python tests examples bench
	$(PYTHON) -m ruff format --check python tests examples bench

build:
	$(PYTHON) -m pip install -q -r tests/requirements.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTL_BUILD_TESTS=ON -DTL_BUILD_EXAMPLES=ON \
	  -DPython_EXECUTABLE=$$($(PYTHON) -c 'import sys; print(sys.executable)')
	cmake --build $(BUILD) -j $(JOBS)

cpp-test:
	TILELANG_CACHE_DIR=$(CURDIR)/$(BUILD)/test-cache ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

py-test:
	TILELANG_DEV_BUILD_DIR=$(CURDIR)/$(BUILD) PYTHONPATH=$(CURDIR)/python \
	  TILELANG_CACHE_DIR=$(CURDIR)/$(BUILD)/test-cache $(PYTHON) -m pytest tests/python -q -n $(JOBS) --dist loadfile --durations=15

# The compiler core, unit tests and extension under ASan + UBSan (tests/sanitize.sh).
sanitize:
	PYTHON=$(PYTHON) JOBS=$(JOBS) bash tests/sanitize.sh

bench:
	TILELANG_DEV_BUILD_DIR=$(CURDIR)/$(BUILD) PYTHONPATH=$(CURDIR)/python $(PYTHON) bench/compile_speed.py

clean:
	rm -rf $(BUILD)
