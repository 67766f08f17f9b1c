# plan — build, test and benchmark.
#   make          fetch pinned assets (npm pack, sha256-checked) and build bin/plan
#   make install  build, then install bin/plan as PREFIX/bin/plan (PREFIX=/usr/local; DESTDIR for
#                 staging) and, where `make assets` fetched ONNX Runtime, its library as
#                 PREFIX/lib/plan/libonnxruntime.so, where the installed binary looks for it
#   make demo     the above, then solve, simulate (plots) and check the embedded demo (out/demo/)
#   make native   translate the pinned highs.wasm to C (wasm2c, Debian package wabt) and compile
#                 it once into third_party/highs/native/libhighs_w2c.a for the native solver
#                 engine (build tag highs_native). On by default where wasm2c is installed;
#                 NATIVE=0 builds and tests the pure-Go (wazero) engine only.
#   make test     everything CI runs, each phase timed: gofmt, vet, staticcheck, unit tests (-race
#                 where concurrency lives, scripts/unit-tests.sh; schema drift included), the
#                 wall-clock agreement runs, the serve floor benchmark's quick form, short fuzz
#                 runs, and `plan check` over the golden plans
#   make test-full  the same with every package under -race, the heavy end-to-end test cases
#                 (PLAN_TEST_FULL=1), minute-long agreement runs and 30 s of fuzzing per target
#   make bench    Go benchmarks of the hot paths and the solver
#   make generate regenerate the protobuf/gRPC Go code from the .proto files (protoc from the
#                 Debian package protobuf-compiler; the Go plugins at the pinned versions below)

GO        ?= go
# Per fuzz target, on top of its seed corpus (which the unit tests run): 3 s a target.
FUZZTIME  ?= 3s
# `make test` fuzzes the packages whose test binary links at most this many packages (the
# format decoders, the engine, the profilers' parsers, the exports' readers: 27 targets in 14
# packages); the rest link most of the module, and their instrumented build alone cost more CPU
# than the -race build (scripts/fuzz-all.sh). test-full and `make fuzz` fuzz every target.
FUZZ_MAX_DEPS ?= 220
BENCHTIME ?= 1x
# Trace length per load point of the serve-vs-simulate agreement check: at load 0.9 the PPipe
# comparison sits 2–3 points apart, so short runs scatter around the 3-point bound.
AGREEMENT_DURATION ?= 10s
PKGS      := ./...
PREFIX    ?= /usr/local
ORT_LIB   := third_party/onnxruntime/libonnxruntime.so
# `plan version` of a built binary: the version and commit stamped here (-ldflags -X), since
# `go build -buildvcs=false` or a build outside a checkout records neither.
# Outside a git checkout both are empty and plan reports the module's build info ("(devel)").
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION_PKG := github.com/plan-dev/plan/internal/base/buildinfo
LDFLAGS   := -X $(VERSION_PKG).stampVersion=$(VERSION) -X $(VERSION_PKG).stampCommit=$(COMMIT)
WASM      := third_party/highs/highs.wasm
EMBED     := solver/internal/highs/embed/highs.wasm
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
PROTOC_GEN_GO      ?= google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC ?= google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
GOBIN_DIR          := $(shell $(GO) env GOPATH 2>/dev/null)/bin

# Native HiGHS: wasm2c output is ~50 MB of C, split into NATIVE_PARTS files so that it compiles
# in parallel and in ~0.5 GB per compiler instead of 3.5 GB. Compiled once here, not by cgo on
# every `go test` rebuild; cgo links the archive (solver/internal/highs/native.go).
WASM2C       ?= wasm2c
NATIVE       ?= $(if $(shell command -v $(WASM2C) 2>/dev/null),1,0)
NATIVE_DIR   := third_party/highs/native
NATIVE_LIB   := $(NATIVE_DIR)/libhighs_w2c.a
NATIVE_PARTS := 0 1 2 3 4 5 6 7
# The hot list (w2cgen's hot.go, scripts/native-hot.sh): the functions that a profile of the
# solver's work found running go in the hot parts, compiled with NATIVE_CFLAGS; the rest (57%
# of the code, 0.33% of the engine's samples) go in the others, compiled with
# NATIVE_COLD_CFLAGS (-O1). `make native` 335 -> 268 CPU-s on a 2-core VM, the engine's
# instructions unchanged or fewer (bench/results/ci.md, 2026-11-27).
NATIVE_HOT_LIST  := solver/internal/highs/w2cgen/hot.txt
NATIVE_HOT_PARTS := 0 1 2 3
NATIVE_COLD_OBJS := $(patsubst %,$(NATIVE_DIR)/highs_%.o,$(filter-out $(NATIVE_HOT_PARTS),$(NATIVE_PARTS)))
NATIVE_OBJS  := $(patsubst %,$(NATIVE_DIR)/highs_%.o,$(NATIVE_PARTS) main) $(NATIVE_DIR)/rt.o
# -ffp-contract=off: no fused multiply-add, so floating point matches wasm (and wazero) exactly
# (without -ffast-math, -O3's vector code and -march=native's instructions round as wasm does:
# TestEnginesAgree). -O3 -march=native against -O2: LP relaxation 34.0 → 29.7 ms, facility
# location MIP 1.43 → 1.29 s (medians of 3 interleaved runs); the archive is built where it runs.
# -fno-math-errno: sqrt becomes the sqrtsd instruction alone; with errno, gcc guards it with a
# compare and a call of libm's sqrt for negative arguments. The wasm's other math (log, exp, pow)
# is musl's, compiled into the wasm, so nothing else changes, and sqrt rounds the same either way.
NATIVE_CFLAGS ?= -O3 -march=native -fno-strict-aliasing -ffp-contract=off -fno-math-errno -w
NATIVE_COLD_CFLAGS ?= $(patsubst -O3,-O1,$(NATIVE_CFLAGS))
# guard: 8 GiB of address space reserved per instance and no checks: a bad access (a HiGHS bug)
# faults on a page without access, and the glue's SIGSEGV handler, chained in front of the Go
# runtime's, turns it into that call's trap, an ErrAborted as in wazero (TestOutOfBoundsAccessTraps).
# Where 8 GiB cannot be reserved (ulimit -v) the default engine falls back to wazero.
# bounds: every wasm memory access is compared with the memory size. Against
# scripts/highs-reference.sh's native HiGHS built with the engine's own -ffp-contract=off (so
# the simplex iteration counts agree; BenchmarkLPFile) guard runs at 1.08-1.10x native HiGHS
# per iteration on the hc2-g1 LP relaxation and 0.96-1.01x on the small demo model (CPU time,
# medians of rounds paired with the reference; 1.20-1.26x and 1.07-1.19x before w2cgen's
# cached memory base, forced reads in SSE registers, stack check without a frame pointer and
# -fno-math-errno: bench/results/solver.md); bounds is slower still (1.50-1.54x was measured against
# a reference built without -ffp-contract=off, so against the matched reference it is higher).
NATIVE_MEMCHECK ?= guard
NATIVE_JOBS  ?= $(shell nproc 2>/dev/null || echo 2)
ifeq ($(NATIVE),1)
TAGS       := highs_native
NATIVE_DEP := native
endif
comma := ,

export CGO_ENABLED ?= 1
# GOGC for every go command make runs (the compiler, vet, staticcheck, the test binaries):
# at Go's default pacing (100) they spend a tenth of their CPU in the garbage collector. At
# 400, on a 2-core VM: a cold `go build ./...` 335 and 379 -> 314 and 299 CPU-s (peak
# compiler RSS 1.1 -> 1.7 GB), staticcheck 96 -> 81 CPU-s, three CLI tests 71 and 67 -> 61 and
# 62 CPU-s (peak RSS 1.2 -> 2.5 GB). A GOGC in the environment wins.
export GOGC ?= 400

.PHONY: all assets native build install demo test test-full lint unit unit-race unit-plain agreement bench-quick bench-serve fuzz golden bench clean generate protoc-plugins

all: build

assets:
	./scripts/fetch-assets.sh

native: assets
	@command -v $(WASM2C) >/dev/null || { echo "make native: $(WASM2C) not found: apt-get install wabt (or make NATIVE=0)" >&2; exit 1; }
	@$(MAKE) --no-print-directory -j$(NATIVE_JOBS) $(NATIVE_LIB)

# The stamp names the memory-check mode, so that switching modes regenerates.
$(NATIVE_DIR)/.generated-$(NATIVE_MEMCHECK): $(WASM) $(wildcard solver/internal/highs/w2cgen/*.go) $(NATIVE_HOT_LIST)
	$(GO) run ./solver/internal/highs/w2cgen -wasm $(WASM) -out $(NATIVE_DIR) -wasm2c $(WASM2C) \
	  -parts $(words $(NATIVE_PARTS)) -hot $(NATIVE_HOT_LIST) -hot-parts $(words $(NATIVE_HOT_PARTS)) \
	  $(if $(filter guard,$(NATIVE_MEMCHECK)),-guard-pages)
	touch $@

native_obj_cflags = $(NATIVE_CFLAGS)
$(NATIVE_COLD_OBJS): native_obj_cflags = $(NATIVE_COLD_CFLAGS)
$(NATIVE_OBJS): $(NATIVE_DIR)/%.o: $(NATIVE_DIR)/.generated-$(NATIVE_MEMCHECK)
	$(CC) $(native_obj_cflags) -c $(NATIVE_DIR)/$*.c -o $@

$(NATIVE_LIB): $(NATIVE_OBJS)
	rm -f $@
	ar rcs $@ $^

build: assets $(NATIVE_DEP)
	mkdir -p $(dir $(EMBED)) bin
	cp $(WASM) $(EMBED)
	$(GO) build -tags highs_embed$(if $(TAGS),$(comma)$(TAGS)) -ldflags '$(LDFLAGS)' -o bin/plan ./cmd/plan
	@echo "built bin/plan"

# The binary finds the library in ../lib/plan beside its own directory (profiler/measure's
# search), so PREFIX/bin/plan runs the onnx backend without PLAN_ORT_LIB.
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/plan $(DESTDIR)$(PREFIX)/bin/plan
	@if [ -f $(ORT_LIB) ]; then \
	  install -d $(DESTDIR)$(PREFIX)/lib/plan && \
	  install -m 0644 $(ORT_LIB) $(DESTDIR)$(PREFIX)/lib/plan/libonnxruntime.so && \
	  echo "installed $(DESTDIR)$(PREFIX)/bin/plan and $(DESTDIR)$(PREFIX)/lib/plan/libonnxruntime.so"; \
	else \
	  echo "installed $(DESTDIR)$(PREFIX)/bin/plan (no $(ORT_LIB): the onnx profiler backend needs PLAN_ORT_LIB)"; \
	fi

# The README's first command. internal/base/readme runs scripts/demo.sh for it (after its own build).
demo: build
	./scripts/demo.sh bin/plan

# Each phase timed (scripts/ci-phase.sh): the table, the ten slowest test packages and the load
# average print at the end, or at the first failure.
#
# bin/plan is built before the unit tests (bench-quick and golden run it; the README and golden
# recipe tests' builds of the same tags find its packages compiled). The solver engine's
# TestVersion, without -race, then compiles highs.wasm into wazero's on-disk cache (3 s): under
# -race that compilation took ~25 s in each of the two solver packages that test the wazero
# engine, and the cache serves them (its key is the wasm, the CPU and wazero's version, which a
# test binary reports as "dev": bin/plan's own v1.12.0 entry would not).
#
# The unit groups run with VETTED=1 (go test -vet=off): the lint phase's go vet already ran
# every analyzer over every package and its tests with the same tags, and go test's own vet
# subset took 45 CPU-s a group on a cold cache.
#
# The golden plans' `plan check` (scripts/check-golden.sh, CPU-bound, ~25 s) runs the same
# way from the start of the agreement phase, which keeps little more than half of the two
# cores busy once the fuzzing is done; the golden phase waits for it.
#
# Fuzzing runs as one job in the background at idle priority (scripts/ci-background.sh:
# SCHED_IDLE, so the phases in front lose no CPU time and their timers keep time), started
# right after the assets: it builds the instrumented test binaries (about 4 CPU-minutes) on the
# CPU time the phases in front leave idle, then fuzzes from when the agreement phase starts
# (FUZZ_AFTER), whose wall-clock runs keep about a fifth of the two cores busy. The fuzz phase
# waits for the job and prints its output. Measured with two busy loops at idle priority
# beside them, the agreement runs passed first time and agreed as closely as alone.
PHASE := ./scripts/ci-phase.sh
CI_DIR := $(or $(PLAN_CI_DIR),out/ci)
PREBUILD_FUZZ_BIN := $(CI_DIR)/fuzz-bin
FUZZ_GO := $(CI_DIR)/fuzz-go
test:
	@$(PHASE) --begin
	@$(PHASE) assets $(MAKE) --no-print-directory assets
	@rm -rf $(PREBUILD_FUZZ_BIN) $(FUZZ_GO)
	@FUZZ_MAX_DEPS=$(FUZZ_MAX_DEPS) FUZZ_AFTER=$(FUZZ_GO) ./scripts/ci-background.sh start fuzz ./scripts/fuzz-all.sh run $(PREBUILD_FUZZ_BIN) $(FUZZTIME)
	$(if $(NATIVE_DEP),@$(PHASE) native $(MAKE) --no-print-directory native)
	@$(PHASE) lint $(MAKE) --no-print-directory lint
	@$(PHASE) build sh -c '$(MAKE) --no-print-directory build && $(GO) test -count=1 -tags "$(TAGS)" -run "^TestVersion$$" ./solver/internal/highs'
	@$(PHASE) unit-race $(MAKE) --no-print-directory VETTED=1 unit-race
	@$(PHASE) unit $(MAKE) --no-print-directory VETTED=1 unit-plain
	@$(PHASE) agreement sh -c 'touch $(FUZZ_GO) && ./scripts/ci-background.sh start golden ./scripts/check-golden.sh bin/plan && $(MAKE) --no-print-directory agreement'
	@$(PHASE) bench-quick $(MAKE) --no-print-directory bench-quick
	@$(PHASE) fuzz ./scripts/ci-background.sh wait fuzz
	@$(PHASE) golden ./scripts/ci-background.sh wait golden
	@$(PHASE) --summary

# Everything `make test` runs, with every package under -race, the heavy end-to-end test cases
# (PLAN_TEST_FULL=1, internal/base/testmode: each has a fast representative in `make test`),
# agreement runs of a minute per load point and longer fuzzing, for a machine with time.
test-full:
	PLAN_TEST_FULL=1 $(MAKE) --no-print-directory UNIT_GROUP=full AGREEMENT_DURATION=60s OPENAI_AGREEMENT_DURATION=60s FUZZTIME=30s FUZZ_MAX_DEPS= test

# vet and staticcheck see every package as the unit tests build it (with the native engine's
# tag, so the two share Go's build cache: a fresh CI machine compiles the module once, not
# twice), and the pure-Go engine's files of solver/... without it.
lint: $(NATIVE_DEP)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags '$(TAGS)' $(PKGS)
	$(GO) run $(STATICCHECK) -tags '$(TAGS)' $(PKGS)
	$(if $(TAGS),$(GO) vet ./solver/...)
	$(if $(TAGS),$(GO) run $(STATICCHECK) ./solver/...)

# The generated-code drift test (serve/kservegrpc TestGeneratedCode) needs the plugins.
# The race detector where concurrency lives, the rest without it (scripts/unit-tests.sh says
# which is which); under test-full, every package under -race.
UNIT_GROUP ?= split
unit: unit-race unit-plain

unit-race: $(NATIVE_DEP) protoc-plugins
	$(if $(filter full,$(UNIT_GROUP)),TAGS='$(TAGS)' VETTED='$(VETTED)' ./scripts/unit-tests.sh full,TAGS='$(TAGS)' VETTED='$(VETTED)' ./scripts/unit-tests.sh race)

unit-plain: $(NATIVE_DEP) protoc-plugins
	$(if $(filter full,$(UNIT_GROUP)),@echo "unit-plain: every package ran under -race (UNIT_GROUP=full)",TAGS='$(TAGS)' VETTED='$(VETTED)' ./scripts/unit-tests.sh plain)

# serve vs simulate attainment: every wall-clock agreement run (PPipe, PARD, CascadeServe,
# DyOrc, the OpenAI front end, the autopilot, the streaming rule's TTFT clocks, and goodput
# under overload for DyOrc and QLM). They need real timers, so they run without -race (under
# which they skip themselves), after the unit tests have freed the cores; they use the cores
# little, so scripts/agreement.sh runs them in four lanes side by side, each run retried twice
# when it fails.
OPENAI_AGREEMENT_DURATION ?= 30s
agreement:
	TAGS='$(TAGS)' PLAN_AGREEMENT_DURATION=$(AGREEMENT_DURATION) PLAN_OPENAI_AGREEMENT_DURATION=$(OPENAI_AGREEMENT_DURATION) ./scripts/agreement.sh

# The serve floor benchmark in its quick form: `plan serve` and the bare net/http floor on
# testdata/serve/wide.json at one rate for 2 s each (serve/load/bench-serve.sh; the full sweep
# is `make bench-serve`). It fails when either server does not start or answers nothing.
bench-quick: build
	PLAN_BIN=bin/plan LOADS="" FLOOR_RATES="1000" FLOOR_DURATION=2s ./serve/load/bench-serve.sh

bench-serve: build
	PLAN_BIN=bin/plan ./serve/load/bench-serve.sh

# Every Fuzz target runs for FUZZTIME on top of its seed corpus (the seeds already ran in unit),
# from instrumented test binaries built first (scripts/fuzz-all.sh), or, where FUZZ_BIN names a
# directory agreement-prebuild filled in this run, from those.
fuzz:
	./scripts/fuzz-all.sh $(if $(FUZZ_BIN),run $(FUZZ_BIN)) $(FUZZTIME)


golden: build
	./scripts/check-golden.sh bin/plan

bench: assets $(NATIVE_DEP)
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem -tags '$(TAGS)' $(PKGS)

protoc-plugins:
	$(GO) install $(PROTOC_GEN_GO)
	$(GO) install $(PROTOC_GEN_GO_GRPC)

# Generated files are committed; TestGeneratedCode fails when they drift from the .proto files.
generate: protoc-plugins
	cd serve/kservegrpc/inferencepb && PATH="$(GOBIN_DIR):$$PATH" protoc --go_out=. --go_opt=paths=source_relative \
	  --go-grpc_out=. --go-grpc_opt=paths=source_relative grpc_service.proto
	cd export/internal/tritonpb && PATH="$(GOBIN_DIR):$$PATH" protoc --go_out=. --go_opt=paths=source_relative model_config.proto

clean:
	rm -rf bin $(EMBED) $(NATIVE_DIR)
