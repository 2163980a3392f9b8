# Developer entry points. `make test` is the README's test command: it installs
# the test requirements, builds the C++ core, unit tests and examples, and runs
# ctest and pytest against the freshly built extension.
PYTHON ?= python3
# The build folder `pip install .` left for this Python (build/<wheel tag>, pyproject.toml)
# when there is one: its core is reused and only the tests, examples and anything changed
# since are compiled. Else build/dev, where the core is compiled once for everything.
PY_TAG := $(shell $(PYTHON) -c 'import sys; print("cp%d%d" % sys.version_info[:2])' 2>/dev/null)
INSTALL_BUILD := $(firstword $(wildcard build/$(PY_TAG)-$(PY_TAG)-*))
BUILD ?= $(if $(INSTALL_BUILD),$(INSTALL_BUILD),build/dev)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: test build lint docs cpp-test py-test upstream bench clean sanitize dump-sources

CXX_SOURCES = $(shell git ls-files 'src/*.h' 'src/*.cpp' 'include/*.h' 'python/src/*.cpp' 'python/src/*.h' \
                'tests/cpp/*.cpp' 'tests/cpp/*.h' 'examples/cpp/*.cpp' 'device/*.h' 'device/*.cuh')

test: build lint docs cpp-test py-test upstream
	@echo "== make test done: $$(date -u +%T)"

# Formatting is mechanical: unformatted code fails the test command (and CI). The type
# check covers the package (pyproject.toml [tool.mypy]). clang-tidy (.clang-tidy) checks
# the core and the bindings against the build's compile_commands.json, once there is a
# build; results are cached per file under $(BUILD)/clang-tidy-cache.
lint:
	@echo "== make lint: $$(date -u +%T)"
	clang-format --dry-run --Werror $(CXX_SOURCES)
	$(PYTHON) -m ruff check python tests examples bench
	$(PYTHON) -m ruff format --check python tests examples bench
	$(PYTHON) -m mypy
	$(PYTHON) tests/tools/clang_tidy.py $(BUILD) --jobs $(JOBS)

# The user guide, design notes and API reference (mkdocs.yml) into build/docs, warnings
# as errors (a broken link or anchor, a page left out, a docstring the generator cannot
# read). The reference is read from the sources: nothing is built or imported.
docs:
	@echo "== make docs: $$(date -u +%T)"
	$(PYTHON) -m pip install -q -r docs/requirements.txt
	$(PYTHON) -m mkdocs build --strict --quiet

build:
	@echo "== make build: $$(date -u +%T)"
	$(PYTHON) -m pip install -q -r tests/requirements.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTL_BUILD_TESTS=ON -DTL_BUILD_EXAMPLES=ON \
	  -DPython_EXECUTABLE=$$($(PYTHON) -c 'import sys; print(sys.executable)')
	cmake --build $(BUILD) -j $(JOBS)

cpp-test:
	@echo "== make cpp-test: $$(date -u +%T)"
	TILELANG_CACHE_DIR=$(CURDIR)/$(BUILD)/test-cache ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

py-test:
	@echo "== make py-test: $$(date -u +%T)"
	TILELANG_DEV_BUILD_DIR=$(CURDIR)/$(BUILD) PYTHONPATH=$(CURDIR)/python \
	  TILELANG_CACHE_DIR=$(CURDIR)/$(BUILD)/test-cache $(PYTHON) -m pytest tests/python -q -rs -n $(JOBS) --dist loadfile --durations=15

# TileLang's own tests, unchanged, from the release's sources (tests/upstream/run.py): fixed
# lists of files that pass in full on the cpu target and under the sm_80 emulator. Any
# failure there is a regression.
UPSTREAM_RELEASE ?= 0.1.14
UPSTREAM_RUN = TILELANG_DEV_BUILD_DIR=$(CURDIR)/$(BUILD) PYTHONPATH=$(CURDIR)/python \
  TILELANG_CACHE_DIR=$(CURDIR)/$(BUILD)/test-cache $(PYTHON) tests/upstream/run.py \
  --release $(UPSTREAM_RELEASE) --jobs $(JOBS) --timeout 600 --min-pass-rate 100
upstream:
	@echo "== make upstream: $$(date -u +%T)"
	$(PYTHON) -m pip install -q -r tests/requirements-upstream.txt
	$(UPSTREAM_RUN) --files tests/upstream/ci_files_cpu.txt --mode cpu --out $(BUILD)/upstream-cpu
	$(UPSTREAM_RUN) --files tests/upstream/ci_files_sm80.txt --mode sm80 --out $(BUILD)/upstream-sm80

# The compiler core, unit tests and extension under ASan + UBSan (tests/sanitize.sh).
sanitize:
	PYTHON=$(PYTHON) JOBS=$(JOBS) bash tests/sanitize.sh

# The generated source of every example and benchmark kernel for every target, into
# $(OUT): run before and after a compiler change and diff the two folders
# (tests/tools/dump_sources.py).
OUT ?= $(BUILD)/sources
dump-sources: build
	TILELANG_DEV_BUILD_DIR=$(CURDIR)/$(BUILD) PYTHONPATH=$(CURDIR)/python $(PYTHON) tests/tools/dump_sources.py $(OUT)

bench:
	TILELANG_DEV_BUILD_DIR=$(CURDIR)/$(BUILD) PYTHONPATH=$(CURDIR)/python $(PYTHON) bench/compile_speed.py

clean:
	rm -rf $(BUILD)
