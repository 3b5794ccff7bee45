# schedq: durable task scheduler and job queue inside PostgreSQL
#
#   make            build (warnings are errors)
#   make install    install into the server found by PG_CONFIG
#   make check      build, install, run every suite on throwaway servers
#   make demo       walk through schedq on a throwaway server
#   make bench      run the benchmarks in test/bench

EXTENSION = schedq
MODULE_big = schedq
OBJS = \
	src/schedq.o \
	src/shmem.o \
	src/auth.o \
	src/spi.o \
	src/submit.o \
	src/work.o \
	src/manage.o \
	src/wake.o \
	src/floor.o \
	src/promote.o \
	src/reaper.o \
	src/scheduler.o \
	src/launcher.o \
	src/hooks.o \
	src/observe.o \
	src/cron.o \
	src/periodic.o \
	src/run.o \
	src/executor.o \
	src/tick.o

DATA = $(wildcard sql/schedq--*.sql)

PG_CFLAGS = -Wall -Wmissing-prototypes -Werror

# Suites, run by test/check.sh.  PGXS's REGRESS/ISOLATION variables are not
# used: its check target refuses extensions, and the suites must run as an
# unprivileged OS user against throwaway servers with the library preloaded.
REGRESS_TESTS = install submit claim complete_fail manage budgets grants privileges bad_input promote reaper observe cron_parse periodic workflows
ISOLATION_TESTS = claim_skip_locked claim_floor pause_queue complete_vs_cancel stale_grant dedup_concurrent \
	budget_concurrent lock_key_exclusive concurrency_limit reaper_vs_complete

ifneq ($(wildcard /usr/lib/postgresql/15/bin/pg_config),)
PG_CONFIG ?= /usr/lib/postgresql/15/bin/pg_config
else
PG_CONFIG ?= pg_config
endif
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS does not track header dependencies.
$(OBJS): $(wildcard src/*.h)

.PHONY: check demo bench

check: all install
	PG_CONFIG="$(PG_CONFIG)" REGRESS="$(REGRESS_TESTS)" ISOLATION="$(ISOLATION_TESTS)" \
		bash test/check.sh

demo: all install
	PG_CONFIG="$(PG_CONFIG)" bash test/demo.sh

bench: all install
	PG_CONFIG="$(PG_CONFIG)" bash test/bench/run.sh

.PHONY: format format-check
format:
	clang-format -i src/*.c src/*.h

format-check:
	clang-format --dry-run --Werror src/*.c src/*.h

# make fuzz: build test/fuzz/fuzz_cron (src/cron.c with backend stand-ins)
# with clang's libFuzzer, ASan and UBSan and fuzz it for FUZZ_SECONDS
# seconds; non-zero on a crash, failed check, hang or leak.  Needs clang and
# libclang-rt-14-dev.  See test/fuzz/run.sh.
FUZZ_SECONDS ?= 60

.PHONY: fuzz
fuzz:
	PG_CONFIG="$(PG_CONFIG)" FUZZ_SECONDS="$(FUZZ_SECONDS)" bash test/fuzz/run.sh
