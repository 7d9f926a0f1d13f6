# kbench: nvcc builds kernels/, gcc builds cli/ and refs/, nvcc links.
#   make          build ./kbench
#   make run      install what is missing, build, run configs/default.json, plot
#   make test     build and run every test (GPU tests only where a GPU is)
#   make check    kbench check (needs a GPU)
#   make plot     PNGs from results/*.csv

CUDA    ?= /usr/local/cuda
NVCC    ?= $(shell command -v nvcc 2>/dev/null || echo $(CUDA)/bin/nvcc)
CC      ?= gcc
# Hopper's own code (sm_90a), Ampere's, and PTX the driver compiles for anything newer.
GENCODE ?= -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 \
           -gencode arch=compute_80,code=compute_80
CFLAGS  ?= -O2 -g
CFLAGS  += -fopenmp -std=c11 -Wall -Wextra -Wno-missing-field-initializers -D_GNU_SOURCE -I$(CUDA)/include -MMD -MP
NVFLAGS ?= -O3 -std=c++17 -lineinfo
NVFLAGS += $(GENCODE) $(NVEXTRA) -I$(CUDA)/include -MMD -MP
LDLIBS  := -lcjson -lcublas -lcublasLt -lgomp -ldl -lm -lpthread

BUILD   := build
# kernels/<op>/: the op's kernels (.cu, one family a file) and its planner
# (.c: host code with no GPU in it, unit-tested on the CPU)
CLI_SRC := $(filter-out cli/main.c,$(wildcard cli/*.c cli/ops/*.c)) $(wildcard refs/*.c) $(wildcard kernels/*/*.c)
CU_SRC  := $(wildcard kernels/*.cu kernels/*/*.cu)
LIB_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o) $(CU_SRC:%.cu=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TESTS   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all run test test-asan fuzz check plot deps clean FORCE
all: kbench

$(BUILD)/git.h: FORCE
	@mkdir -p $(BUILD)
	@echo "#define KB_GIT \"$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo -dirty)\"" > $@.tmp
	@cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@

$(BUILD)/cli/report.o: CFLAGS += -include $(BUILD)/git.h
$(BUILD)/cli/report.o: $(BUILD)/git.h
$(BUILD)/cli/default_config.o: configs/default.json

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@

# LINK: what links (nvcc; test-asan links with gcc so that ASan's runtime comes first)
LINK    ?= $(NVCC)
KBENCH_BIN ?= kbench

$(KBENCH_BIN): $(BUILD)/cli/main.o $(LIB_OBJ)
	$(LINK) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Icli -c $< -o $@.o
	$(LINK) -o $@ $@.o $(LIB_OBJ) $(LDLIBS) -lcmocka

deps:
	@scripts/deps.sh

run:
	@scripts/deps.sh build plot
	$(MAKE) kbench
	./kbench sweep configs/default.json --out-dir results
	scripts/plot.sh results/default.csv

test:
	@scripts/deps.sh build test
	$(MAKE) kbench $(TESTS)
	tests/run.sh $(TESTS)

check: kbench
	./kbench check

# The host code and the tests under AddressSanitizer + UBSan, leaks detected:
# its own build tree (build-asan/) and binary (build-asan/kbench); the CUDA
# objects are built as usual (their device code is not instrumented).
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
test-asan:
	@scripts/deps.sh build test
	$(MAKE) BUILD=build-asan KBENCH_BIN=build-asan/kbench CFLAGS="$(ASAN_FLAGS)" \
	    LINK="$(CC) $(ASAN_FLAGS)" LDLIBS="$(LDLIBS) -L$(CUDA)/lib64 -lcudart_static -lrt -lstdc++" \
	    build-asan/kbench $(TESTS:$(BUILD)/%=build-asan/%)
	ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0:protect_shadow_gap=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    KBENCH=build-asan/kbench tests/run.sh $(TESTS:$(BUILD)/%=build-asan/%)

plot:
	@scripts/deps.sh plot
	@for f in results/*.csv; do [ -e "$$f" ] || { echo "make plot: no CSV in results/ (run make run first)"; exit 1; }; \
	    scripts/plot.sh "$$f" || exit 1; done

# libFuzzer (clang) over the parsers: tests/fuzz/fuzz_<name>.c, the host code
# built again with ASan + UBSan, the CUDA objects of the normal build linked
# as they are (no GPU call is reached). Each runs SECONDS (default 60),
# seeded from configs/ and tests/data/compare; new inputs go to build-fuzz/.
FUZZ_CC    ?= clang
SECONDS    ?= 60
FUZZ_FLAGS := -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -std=c11 -D_GNU_SOURCE -Wno-unknown-pragmas -I$(CUDA)/include -Icli
FUZZ_OBJ   := $(CLI_SRC:%.c=build-fuzz/%.o)
FUZZERS    := $(patsubst tests/fuzz/%.c,build-fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
CU_OBJ     := $(CU_SRC:%.cu=$(BUILD)/%.o)

build-fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ) $(CU_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ -o $@ -lcjson -lcublas -lcublasLt -L$(CUDA)/lib64 \
	    -lcudart_static -ldl -lm -lpthread -lrt -lstdc++

fuzz: $(FUZZERS)
	@for f in $(FUZZERS); do \
	    n=$${f#build-fuzz/fuzz_}; mkdir -p build-fuzz/corpus-$$n; \
	    case $$n in sweep) seeds="configs tests/fuzz/seeds/sweep";; compare) seeds="tests/data/compare";; esac; \
	    echo "== $$f, $(SECONDS) s"; \
	    ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0 $$f -max_total_time=$(SECONDS) -max_len=65536 \
	        -artifact_prefix=build-fuzz/ build-fuzz/corpus-$$n $$seeds > build-fuzz/$$n.log 2>&1; \
	    rc=$$?; grep -E '^#[0-9]+ +DONE|^Done' build-fuzz/$$n.log | tail -n 1; \
	    [ $$rc -eq 0 ] || { tail -n 40 build-fuzz/$$n.log; echo "fuzz $$n: exit $$rc (inputs: build-fuzz/crash-*)"; exit 1; }; \
	done

.SECONDARY: $(FUZZ_OBJ)

clean:
	rm -rf $(BUILD) build-asan build-fuzz kbench

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
