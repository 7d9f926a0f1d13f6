# kbench: nvcc builds kernels/, gcc builds cli/ and refs/, nvcc links.
#   make          build ./kbench
#   make run      install what is missing, build, run configs/default.json, plot
#   make test     build and run every test (GPU tests only where a GPU is)
#   make test-slurm  a real Slurm on this machine (root; CI runs it): a job array and its merge
#   make check    kbench check (needs a GPU)
#   make plot     PNGs from results/*.csv
#   make examples the example plugins, build/examples/libkb_<name>.so

CUDA    ?= /usr/local/cuda
NVCC    ?= $(shell command -v nvcc 2>/dev/null || echo $(CUDA)/bin/nvcc)
CC      ?= gcc
# Hopper's own code (sm_90a), Ampere's, and PTX the driver compiles for anything newer.
GENCODE ?= -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 \
           -gencode arch=compute_80,code=compute_80
CFLAGS  ?= -O2 -g
# what the host code needs whatever CFLAGS says (test-asan replaces CFLAGS on
# the command line, which would drop anything added to it here)
KB_CFLAGS := -fopenmp -std=c11 -Wall -Wextra -Wno-missing-field-initializers -Werror=implicit-function-declaration -D_GNU_SOURCE -I$(CUDA)/include -MMD -MP
NVFLAGS ?= -O3 -std=c++17 -lineinfo
NVFLAGS += $(GENCODE) $(NVEXTRA) -I$(CUDA)/include -MMD -MP
LDLIBS  := -lcjson -lcublas -lcublasLt -lgomp -ldl -lm -lpthread

BUILD   := build
# kernels/<op>/: the op's kernels (.cu, one family a file) and its planner
# (.c: host code with no GPU in it, unit-tested on the CPU)
CLI_SRC := $(filter-out cli/main.c,$(wildcard cli/*.c cli/*/*.c)) $(wildcard refs/*.c) $(wildcard kernels/*/*.c)
CU_SRC  := $(wildcard kernels/*.cu kernels/*/*.cu)
LIB_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o) $(CU_SRC:%.cu=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TESTS   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all run test test-asan test-slurm fuzz check plot deps clean examples test-plugins FORCE
all: kbench

# the commit the rows name (kbench.git_commit): git's, or GIT_COMMIT=... where
# the tree was copied without its history (a tarball, a remote build machine)
GIT_COMMIT ?= $$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo -dirty)
$(BUILD)/git.h: FORCE
	@mkdir -p $(BUILD)
	@echo "#define KB_GIT \"$(GIT_COMMIT)\"" > $@.tmp
	@cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@

$(BUILD)/cli/report/report.o: KB_CFLAGS += -include $(BUILD)/git.h
$(BUILD)/cli/report/report.o: $(BUILD)/git.h
$(BUILD)/cli/core/default_config.o: configs/default.json
$(BUILD)/cli/core/pyshim_src.o: cli/core/pyshim.py

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KB_CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@

# LINK: what links (nvcc; test-asan links with gcc so that ASan's runtime comes first)
LINK    ?= $(NVCC)
KBENCH_BIN ?= kbench

$(KBENCH_BIN): $(BUILD)/cli/main.o $(LIB_OBJ)
	$(LINK) -o $@ $^ $(LDLIBS)

# kb_main without main(), for the tests (test_main.c runs the command line)
$(BUILD)/cli/main-nomain.o: cli/main.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KB_CFLAGS) -DKB_NO_MAIN -c $< -o $@

$(BUILD)/tests/%: tests/%.c $(LIB_OBJ) $(BUILD)/cli/main-nomain.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KB_CFLAGS) -Icli -c $< -o $@.o
	$(LINK) -o $@ $@.o $(LIB_OBJ) $(BUILD)/cli/main-nomain.o $(LDLIBS) -lcmocka

# Plugins (include/kbench_plugin.h). examples/plugins/<name>.cu: the example
# plugins, each built into $(BUILD)/examples/libkb_<name>.so by the line that
# examples/plugins/README.md gives (mlp_cublas links cuBLAS).
# tests/plugins/<name>.c: small C plugins the CLI tests load, most of them
# broken on purpose (tests/plugins/README.md), into $(BUILD)/tests/plugins/,
# with not_a_library.so, a text file under a library's name.
EXAMPLES      := $(patsubst examples/plugins/%.cu,$(BUILD)/examples/libkb_%.so,$(wildcard examples/plugins/*.cu))
TEST_PLUGINS  := $(patsubst tests/plugins/%.c,$(BUILD)/tests/plugins/%.so,$(wildcard tests/plugins/*.c)) \
                 $(BUILD)/tests/plugins/not_a_library.so \
                 $(patsubst tests/plugins/cuda/%.cu,$(BUILD)/tests/plugins/lib%.so,$(wildcard tests/plugins/cuda/*.cu))

examples: $(EXAMPLES)

$(BUILD)/examples/libkb_mlp_cublas.so: EXAMPLE_LIBS := -lcublas
$(BUILD)/examples/libkb_%.so: examples/plugins/%.cu include/kbench_plugin.h
	@mkdir -p $(dir $@)
	$(NVCC) -shared -Xcompiler -fPIC,-Wall,-Wextra -O3 $(GENCODE) -Iinclude $< -o $@ $(EXAMPLE_LIBS)

test-plugins: $(TEST_PLUGINS)

$(BUILD)/tests/plugins/%.so: tests/plugins/%.c include/kbench_plugin.h
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O1 -std=c11 -Wall -Wextra -Werror -Iinclude $< -o $@

# faulty CUDA plugins for the GPU checks (tests/plugins/cuda/faulty.cu)
$(BUILD)/tests/plugins/lib%.so: tests/plugins/cuda/%.cu include/kbench_plugin.h
	@mkdir -p $(dir $@)
	$(NVCC) -shared -Xcompiler -fPIC,-Wall,-Wextra -O1 $(GENCODE) -Iinclude $< -o $@

$(BUILD)/tests/plugins/not_a_library.so: tests/plugins/not_a_library.txt
	@mkdir -p $(dir $@)
	cp $< $@

deps:
	@scripts/deps.sh

run:
	@scripts/deps.sh build plot
	$(MAKE) kbench
	./kbench sweep configs/default.json --out-dir results
	scripts/plot.sh results/default.csv

# a real Slurm on this machine (root): a --dry-run job array and its merge job
test-slurm:
	@scripts/deps.sh build slurm
	$(MAKE) kbench
	tests/slurm.sh ./kbench; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

test:
	@scripts/deps.sh build test --optional plot
	$(MAKE) kbench $(TESTS) test-plugins examples
	KB_BUILD=$(BUILD) KB_TEST_PLUGINS=$(BUILD)/tests/plugins KB_EXAMPLES=$(BUILD)/examples tests/run.sh $(TESTS)

check: kbench
	./kbench check

# The host code and the tests under AddressSanitizer + UBSan, leaks detected:
# its own build tree (build-asan/) and binary (build-asan/kbench); the CUDA
# objects are built as usual (their device code is not instrumented).
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
test-asan:
	@scripts/deps.sh build test --optional plot
	$(MAKE) BUILD=build-asan KBENCH_BIN=build-asan/kbench CFLAGS="$(ASAN_FLAGS)" \
	    LINK="$(CC) $(ASAN_FLAGS)" LDLIBS="$(LDLIBS) -L$(CUDA)/lib64 -lcudart_static -lrt -lstdc++" \
	    build-asan/kbench $(TESTS:$(BUILD)/%=build-asan/%) test-plugins examples
	ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0:protect_shadow_gap=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    KBENCH=build-asan/kbench KB_BUILD=build-asan KB_TEST_PLUGINS=build-asan/tests/plugins KB_EXAMPLES=build-asan/examples \
	    tests/run.sh $(TESTS:$(BUILD)/%=build-asan/%)

plot:
	@scripts/deps.sh plot
	@for f in results/*.csv; do [ -e "$$f" ] || { echo "make plot: no CSV in results/ (run make run first)"; exit 1; }; \
	    scripts/plot.sh "$$f" || exit 1; done

# libFuzzer (clang) over the parsers: tests/fuzz/fuzz_<name>.c, the host code
# built again with ASan + UBSan, the CUDA objects of the normal build linked
# as they are. fuzz_sweep: the JSON sweep parser and the dry-run expansion;
# fuzz_compare: compare's result-file reader; fuzz_cmdline: the whole command
# line (kb_main), with kb_device_open stubbed to fail as without a GPU (so no
# GPU call is reached) and kbench run in a sandbox directory; fuzz_plugin: the
# plugin loader's check of a library's file before dlopen (cli/core/elfcheck.c).
# Each runs SECONDS (default 60), seeded from configs/, tests/data/compare,
# tests/fuzz/seeds/ and the test plugins ($(BUILD)/tests/plugins, mutated byte
# by byte); new inputs go to $(FUZZ_BUILD)/corpus-NAME, crashes to
# $(FUZZ_BUILD)/crash-*. The fuzz build lowers KB_MAX_CASES so that the largest
# sweep it allows expands in milliseconds (a million cases take seconds under
# ASan and would only slow the fuzzing down), and KB_MAX_PLAN_BYTES (16 MiB,
# about 10000 cases) so that a plan refused for the memory it would take is
# reached below it (tests/fuzz/seeds/sweep/huge-*.json).
FUZZ_CC    ?= clang
FUZZ_BUILD ?= build-fuzz
SECONDS    ?= 60
FUZZ_FLAGS := -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -std=c11 -D_GNU_SOURCE -Wno-unknown-pragmas -I$(CUDA)/include -Icli \
              -DKB_MAX_CASES=20000 -DKB_MAX_PLAN_BYTES=16777216
FUZZ_LIBS  := -lcjson -lcublas -lcublasLt -L$(CUDA)/lib64 -lcudart_static -ldl -lm -lpthread -lrt -lstdc++
FUZZ_OBJ   := $(CLI_SRC:%.c=$(FUZZ_BUILD)/%.o)
FUZZERS    := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(wildcard tests/fuzz/fuzz_*.c))
CU_OBJ     := $(CU_SRC:%.cu=$(BUILD)/%.o)

# FUZZ_CFLAGS as the fuzz objects were built with: they are rebuilt when it changes
$(FUZZ_BUILD)/flags: FORCE
	@mkdir -p $(FUZZ_BUILD)
	@echo '$(FUZZ_CFLAGS)' > $@.tmp
	@cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@

$(FUZZ_BUILD)/%.o: %.c $(FUZZ_BUILD)/flags
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/cli/main-nomain.o: cli/main.c $(FUZZ_BUILD)/flags
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -DKB_NO_MAIN -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ) $(CU_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ -o $@ $(FUZZ_LIBS)

$(FUZZ_BUILD)/fuzz_cmdline: tests/fuzz/fuzz_cmdline.c $(FUZZ_BUILD)/cli/main-nomain.o $(FUZZ_OBJ) $(CU_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -DKB_FUZZ_ROOT='"$(CURDIR)"' -fsanitize=fuzzer -Wl,--wrap=kb_device_open $^ -o $@ $(FUZZ_LIBS)

fuzz: $(FUZZERS) $(filter-out $(BUILD)/tests/plugins/lib%.so,$(TEST_PLUGINS))
	@for f in $(FUZZERS); do \
	    n=$${f#$(FUZZ_BUILD)/fuzz_}; mkdir -p $(FUZZ_BUILD)/corpus-$$n; max=65536; \
	    case $$n in sweep) seeds="configs tests/fuzz/seeds/sweep";; compare) seeds="tests/data/compare";; \
	        cmdline) seeds="tests/fuzz/seeds/cmdline"; max=4096;; \
	        plugin) seeds="$(FUZZ_BUILD)/seeds-plugin"; rm -rf $$seeds; mkdir -p $$seeds; \
	            cp $(filter-out $(BUILD)/tests/plugins/lib%.so,$(TEST_PLUGINS)) $$seeds/;; esac; \
	    echo "== $$f, $(SECONDS) s"; \
	    ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0 $$f -max_total_time=$(SECONDS) -max_len=$$max \
	        -artifact_prefix=$(abspath $(FUZZ_BUILD))/ $(FUZZ_BUILD)/corpus-$$n $$seeds > $(FUZZ_BUILD)/$$n.log 2>&1; \
	    rc=$$?; grep -aE '^#[0-9]+[[:space:]]+DONE|^Done' $(FUZZ_BUILD)/$$n.log | tail -n 2; \
	    [ $$rc -eq 0 ] || { tail -n 40 $(FUZZ_BUILD)/$$n.log; echo "fuzz $$n: exit $$rc (inputs: $(FUZZ_BUILD)/crash-*)"; exit 1; }; \
	done

.SECONDARY: $(FUZZ_OBJ) $(FUZZ_BUILD)/cli/main-nomain.o

clean:
	rm -rf $(BUILD) build-asan build-fuzz kbench

-include $(shell find $(BUILD) $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
