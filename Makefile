# Builds of the Lambda functions for SAM's makefile build method.
#
# Every function in template.yaml has `Metadata: BuildMethod: makefile` and
# `CodeUri: .`; `sam build` runs, for each, in the source tree (with
# --build-in-source) or in a copy of it:
#
#     make --makefile <repo>/Makefile build-<LogicalId>    # ARTIFACTS_DIR in the environment
#
# and packages what the target leaves in $(ARTIFACTS_DIR). By hand:
#
#     make build-ApiFunction ARTIFACTS_DIR=/tmp/api
#
# LAMBDA_ARCH selects the architecture (template.yaml deploys arm64; the
# tests build amd64 too, to run the same target under aws-lambda-rie).

LAMBDA_ARCH ?= arm64
GO ?= go
# Linker flags: -s -w leave out the symbol table and DWARF, about 30% of
# each binary (the worker's arm64 bootstrap: 44.6 MB with them, 30.9 MB
# without); panics still print their stacks. LDFLAGS= builds them in.
LDFLAGS ?= -s -w

FUNCTIONS := ApiFunction WorkerFunction SchedulerFunction MigrateFunction

pkg_ApiFunction       := ./functions/api
pkg_WorkerFunction    := ./functions/worker
pkg_SchedulerFunction := ./functions/scheduler
pkg_MigrateFunction   := ./functions/migrate

# A static linux executable named bootstrap, as provided.al2023 runs it;
# lambda.norpc leaves out the RPC mode only the retired go1.x runtime used.
# GB_VERSION is the gb version stamped into the binaries, which every step
# a worker makes records (jobs.BuildVersion): git describe of the source
# tree when it is a git checkout; empty leaves the Go build's own.
GB_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
STAMP = $(if $(GB_VERSION),-X github.com/gbresearch/gb/jobs.stamped=$(GB_VERSION))
GO_BUILD = CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_ARCH) $(GO) build -trimpath -tags lambda.norpc -ldflags '$(LDFLAGS) $(STAMP)'

.PHONY: lambdas $(addprefix build-,$(FUNCTIONS))

# lambdas builds every function into .aws-sam/make/<LogicalId>/bootstrap.
lambdas:
	@for f in $(FUNCTIONS); do $(MAKE) --no-print-directory build-$$f ARTIFACTS_DIR=$(CURDIR)/.aws-sam/make/$$f || exit 1; done

$(addprefix build-,$(FUNCTIONS)): build-%:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set: sam build sets it; by hand run make $@ ARTIFACTS_DIR=<dir>" >&2; exit 2; }
	@mkdir -p "$(ARTIFACTS_DIR)"
	$(GO_BUILD) -o "$(ARTIFACTS_DIR)/bootstrap" $(pkg_$*)
