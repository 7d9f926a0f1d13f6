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

.PHONY: all run test test-asan check plot deps clean FORCE
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

clean:
	rm -rf $(BUILD) build-asan kbench

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
