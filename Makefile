# schedq: durable task scheduler and job queue inside PostgreSQL
#
#   make            build
#   make install    install into the server found by PG_CONFIG (and schedqctl
#                   into its bindir, its manual page into MANDIR: pg_config
#                   --mandir by default; it says how to reach them)
#   make check      build, install, run every suite on throwaway servers
#   make check-matrix   what CI runs: the suites on PostgreSQL 15, 17 and 18
#                   (servers built or fetched once, cached), then format,
#                   clang-tidy and fuzz checks
#   make demo       install (saying where first), then walk through schedq and
#                   schedqctl on a throwaway server
#   make bench      run the benchmarks in test/bench
#   make bench-examples   tasks per second through the example workers
#   make dist       the PGXN release archive schedq-VERSION.zip (git archive
#                   of HEAD; VERSION from META.json; DIST_DIR=. by default)
#   make deb        the Debian packages postgresql-NN-schedq_VERSION-1_ARCH.deb,
#                   one per PostgreSQL whose server headers
#                   (postgresql-server-dev-NN) are installed
#                   (dpkg-buildpackage on a git archive of HEAD) in build/
#                   (DEB_DIR)
#   make check-citus  schedq on a three-node Citus cluster (optional; builds
#                   nothing, skips without Citus; see docs/scale-out.md)
#   make check-ha   schedq under pg_auto_failover: a switchover and a crash of
#                   the primary under load (test/t/080_ha.pl alone; part of
#                   make check too; skips without pg_autoctl and the
#                   pgautofailover extension; see docs/operations.md)

EXTENSION = schedq schedq_cron
MODULE_big = schedq
# The source is in layers, one directory each, in this order: a file may
# call files of its own directory and of the directories after it, never
# those before (src/README.md; test/t/000_layout.pl checks it).
SRC_LAYERS = process api pass store shared base
OBJS = $(patsubst %.c,%.o,$(foreach d,$(SRC_LAYERS),$(sort $(wildcard src/$(d)/*.c))))

# schedq_cron (schedq_cron.control): pg_cron's SQL API on schedq, SQL only
DATA = $(wildcard sql/schedq--*.sql) $(wildcard sql/schedq_cron--*.sql)

# Warnings are errors in make check and CI (WERROR=1), not for a user
# building with another compiler or PostgreSQL version.
PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wmissing-prototypes
ifeq ($(WERROR),1)
PG_CFLAGS += -Werror
endif

# Suites, run by test/check.sh.  PGXS's REGRESS/ISOLATION variables are not
# used: its check target refuses extensions, and the suites must run as an
# unprivileged OS user against throwaway servers with the library preloaded.
REGRESS_TESTS = install submit claim complete_fail progress manage budgets grants grant_session privileges work_grants bad_input promote reaper observe cron_parse periodic workflows hardening hostile_input interval_parts complete_and_claim cron_api distribute claim_queue
ISOLATION_TESTS = claim_skip_locked claim_floor pause_queue complete_vs_cancel stale_grant dedup_concurrent \
	budget_concurrent lock_key_exclusive concurrency_limit reaper_vs_complete schedule_race complete_and_claim \
	repeatable_read work_grant gates_two_completers gates_complete_vs_pass gates_complete_vs_cancel \
	cron_jobs run_now_race limit_waiters

ifneq ($(wildcard /usr/lib/postgresql/15/bin/pg_config),)
PG_CONFIG ?= /usr/lib/postgresql/15/bin/pg_config
else
PG_CONFIG ?= pg_config
endif
EXTRA_CLEAN = .build-for

# PGXS has a check target of its own, which only says that "make check" is
# not supported for extensions; schedq's check runs its suites instead.
# Two recipes for one target make GNU make warn ("overriding recipe for
# target 'check'"), so a make asked for check does not read PGXS, nor the
# rest of this file: check builds and installs in a sub-make that does,
# and every other goal named with it (make clean check) is handed to a
# sub-make of its own, in the order given.
ifneq ($(filter check,$(MAKECMDGOALS)),)
.NOTPARALLEL:
.PHONY: check $(filter-out check,$(MAKECMDGOALS))
check:
	$(MAKE) PG_CONFIG="$(PG_CONFIG)" WERROR=1 all install
	@$(MAKE) --no-print-directory PG_CONFIG="$(PG_CONFIG)" examples-deps || \
		echo "make check: the Node.js packages (examples/node, clients/node, test/web) could not be installed; their tests will be skipped"
	PG_CONFIG="$(PG_CONFIG)" REGRESS="$(REGRESS_TESTS)" ISOLATION="$(ISOLATION_TESTS)" \
		bash test/check.sh

$(filter-out check,$(MAKECMDGOALS)):
	$(MAKE) PG_CONFIG="$(PG_CONFIG)" $@

else # not check: the build, with PGXS
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS does not track header dependencies.
$(OBJS): $(wildcard src/*/*.h)

# Objects built for one server are rebuilt for another: .build-for holds
# the server the objects were built against, and changes with PG_CONFIG.
BUILD_FOR := $(PG_CONFIG) $(shell $(PG_CONFIG) --version)
.build-for: FORCE
	@echo '$(BUILD_FOR)' | cmp -s - $@ || echo '$(BUILD_FOR)' > $@
$(OBJS): .build-for
.PHONY: FORCE

# schedqctl, the command-line tool (schedqctl/): a client program with its
# own PGXS Makefile, built, installed and cleaned with the extension.
SCHEDQCTL_MAKE = $(MAKE) -C schedqctl PG_CONFIG="$(PG_CONFIG)" WERROR="$(WERROR)"

# NO_SCHEDQCTL=1 builds and installs the extension alone (a server whose
# libpq headers are not installed, as test/matrix.sh's upgrade source).
.PHONY: schedqctl-all schedqctl-install schedqctl-uninstall schedqctl-clean
ifneq ($(NO_SCHEDQCTL),1)
all: schedqctl-all
install: schedqctl-install
uninstall: schedqctl-uninstall
endif
clean: schedqctl-clean

schedqctl-all:
	$(SCHEDQCTL_MAKE) all

schedqctl-install:
	$(SCHEDQCTL_MAKE) install

schedqctl-uninstall:
	$(SCHEDQCTL_MAKE) uninstall

schedqctl-clean:
	$(SCHEDQCTL_MAKE) clean

.PHONY: demo bench bench-examples check-citus check-ha

# What CI runs: every suite on every server of the version matrix
# (test/pg-server.sh builds or fetches the servers, cached outside the
# tree), then the formatting, clang-tidy and fuzzing checks; one summary
# line.  MATRIX and HABITS choose (see test/matrix.sh).
.PHONY: check-matrix
check-matrix:
	bash test/matrix.sh

# Optional: schedq distributed on a local three-node Citus cluster
# (test/citus/check.sh).  Builds and installs nothing: Citus and schedq must
# already be installed in PG_CONFIG's server; skips when Citus is not.
check-citus:
	PG_CONFIG="$(PG_CONFIG)" bash test/citus/check.sh

# schedq under a real failover manager (test/t/080_ha.pl): built and
# installed as make check does, then that test alone.
check-ha:
	$(MAKE) PG_CONFIG="$(PG_CONFIG)" WERROR=1 all install
	PG_CONFIG="$(PG_CONFIG)" SUITES=tap TAP_TESTS=080_ha bash test/check.sh

# The demo's throwaway server loads the installed library: make demo
# installs first, into the PostgreSQL of PG_CONFIG, and says so before.
demo: all
	@echo "make demo: installing schedq into the PostgreSQL of $(PG_CONFIG):"
	@echo "    the library:        $(DESTDIR)$(pkglibdir)/schedq$(DLSUFFIX)"
	@echo "    control, scripts:   $(DESTDIR)$(datadir)/extension/schedq.control, schedq--*.sql"
	@echo "    schedqctl:          $(DESTDIR)$(bindir)/schedqctl (and its manual page)"
	@echo "  (make uninstall removes them); then the tour runs on a throwaway server."
	$(MAKE) --no-print-directory install
	PG_CONFIG="$(PG_CONFIG)" bash test/demo.sh

bench: all install
	PG_CONFIG="$(PG_CONFIG)" bash test/bench/run.sh

# Tasks per second through each example worker, next to SQL-level claim +
# complete in the same run (run by hand).
bench-examples: all install examples-deps
	PG_CONFIG="$(PG_CONFIG)" bash test/bench/examples.sh

# The packages of the example workers that are not Debian's: the Node.js
# example's, pinned by its lockfile (npm ci), installed again only when the
# lockfile changes, or the library it is built on (clients/node, copied
# into it: examples/node/.npmrc has install-links); and the library's own,
# for its tests (typescript for tsc).  Needs npm, and the npm registry
# unless npm's cache has them.  test/t/051_example_node.pl skips the
# example without them, test/t/091_client_node.pl the library, and
# test/t/056_web_console.pl the console without its own.
.PHONY: examples-deps
examples-deps: examples/node/node_modules/.package-lock.json \
	clients/node/node_modules/.package-lock.json \
	test/web/node_modules/.package-lock.json

NODE_CLIENT_FILES = clients/node/package.json clients/node/index.js \
	clients/node/index.d.ts $(wildcard clients/node/lib/*.js)

examples/node/node_modules/.package-lock.json: examples/node/package.json \
	examples/node/package-lock.json $(NODE_CLIENT_FILES)
	cd examples/node && npm ci --prefer-offline --no-audit --no-fund

clients/node/node_modules/.package-lock.json: clients/node/package.json clients/node/package-lock.json
	cd clients/node && npm ci --prefer-offline --no-audit --no-fund

# The console's test (test/t/056_web_console.pl): playwright-core, which
# drives Debian's chromium; pinned by its lockfile.
test/web/node_modules/.package-lock.json: test/web/package.json test/web/package-lock.json
	cd test/web && npm ci --prefer-offline --no-audit --no-fund

.PHONY: format format-check
format:
	clang-format -i src/*/*.[ch] schedqctl/*.[ch]

format-check:
	clang-format --dry-run --Werror src/*/*.[ch] schedqctl/*.[ch]

# make analyze: clang-tidy (the Clang static analyzer and bugprone checks,
# .clang-tidy says which and why not the others) over every C file, against
# PG_CONFIG's headers; non-zero on any finding.
TIDY_JOBS ?= 2
.PHONY: analyze
analyze:
	@ls src/*/*.c | xargs -P $(TIDY_JOBS) -I{} clang-tidy --quiet {} -- \
		-D_GNU_SOURCE -Isrc -I$(shell $(PG_CONFIG) --includedir-server)
	@ls schedqctl/*.c | xargs -P $(TIDY_JOBS) -I{} clang-tidy --quiet {} -- \
		-D_GNU_SOURCE -DFRONTEND -DSCHEDQ_VERSION='"analyze"' -Ischedqctl \
		-I$(shell $(PG_CONFIG) --includedir) \
		-I$(shell $(PG_CONFIG) --includedir-server) \
		-I$(shell $(PG_CONFIG) --pkgincludedir)/internal

# make fuzz: build test/fuzz/fuzz_cron (src/base/cron.c with backend stand-ins)
# with clang's libFuzzer, ASan and UBSan and fuzz it for FUZZ_SECONDS
# seconds; non-zero on a crash, failed check, hang or leak.  Needs clang and
# libclang-rt-14-dev.  See test/fuzz/run.sh.
FUZZ_SECONDS ?= 60

.PHONY: fuzz
fuzz:
	PG_CONFIG="$(PG_CONFIG)" FUZZ_SECONDS="$(FUZZ_SECONDS)" bash test/fuzz/run.sh

# Releases.  The version is META.json's (test/t/070_package.pl checks that
# schedq.control's default_version and debian/changelog agree with it).  Both
# targets package HEAD as committed: uncommitted changes are left out, with a
# warning.
DIST_VERSION = $(shell perl -MJSON::PP -e 'local $$/; open(my $$f, "<", "META.json") or exit 1; print decode_json(<$$f>)->{version}')
DIST_NAME = schedq-$(DIST_VERSION)
DIST_DIR ?= .
DEB_DIR ?= build

.PHONY: dist deb dist-version
dist-version:
	@test -n "$(DIST_VERSION)" || { echo "no version in META.json" >&2; exit 1; }
	@git rev-parse --verify -q HEAD >/dev/null || { echo "$(CURDIR) is not a git work tree with a commit" >&2; exit 1; }
	@git diff --quiet HEAD -- || \
		echo "warning: uncommitted changes are not packaged (HEAD is)" >&2

dist: dist-version
	mkdir -p $(DIST_DIR)
	git archive --format=zip --prefix=$(DIST_NAME)/ -o $(DIST_DIR)/$(DIST_NAME).zip HEAD
	@echo "$(DIST_DIR)/$(DIST_NAME).zip"

# dpkg-buildpackage -b in a fresh copy of HEAD (git archive), so that nothing
# of the work tree's builds gets in; the .deb files are moved to $(DEB_DIR).
# debian/pgversions says 15+; the versions built are those of it whose
# server headers are installed (PG_SUPPORTED_VERSIONS=installed), and
# debian/control is made for them (PG_UPDATECONTROL).
# Needs devscripts' and debhelper's tools, postgresql-server-dev-all,
# libpq-dev, libncurses-dev and libmicrohttpd-dev (.ci/run installs them).
deb: dist-version
	@upstream=$$(dpkg-parsechangelog -S Version | sed 's/-[^-]*$$//'); \
	test "$$upstream" = "$(DIST_VERSION)" || \
		{ echo "debian/changelog says $$upstream, META.json $(DIST_VERSION)" >&2; exit 1; }
	mkdir -p $(DEB_DIR)
	set -e; out=$$(cd $(DEB_DIR) && pwd); tmp=$$(mktemp -d "$$out/deb.XXXXXX"); \
	trap 'rm -rf "$$tmp"' EXIT; \
	git archive --prefix=$(DIST_NAME)/ HEAD | tar -x -C "$$tmp"; \
	(cd "$$tmp/$(DIST_NAME)" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		PG_SUPPORTED_VERSIONS=installed PG_UPDATECONTROL=yes \
		dpkg-buildpackage -us -uc -b); \
	mv -f "$$tmp"/*.deb "$$out"/; \
	ls "$$out"/*.deb

endif # not check
