package schedq_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
)

// The tests run against a real server with schedq installed: the libpq
// connection string in SCHEDQ_TEST_DSN, as a superuser (test/t/092 sets
// it).  Each test uses queues and kinds of its own.

func dsn(t *testing.T) string {
	d := os.Getenv("SCHEDQ_TEST_DSN")
	if d == "" {
		t.Skip("SCHEDQ_TEST_DSN is not set (a superuser's connection to a database with schedq)")
	}
	return d
}

// newPool connects with application_name app, so that a test can find
// (and terminate) that pool's sessions.
func newPool(t *testing.T, app string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.MaxConns = 8
	pool, err := pgxpool.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// one runs a query of one value.
func one[T any](t *testing.T, pool *pgxpool.Pool, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func run(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// waitFor polls sql until it returns want, up to a deadline.
func waitFor(t *testing.T, pool *pgxpool.Pool, within time.Duration, want string, sql string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	var got string
	for time.Now().Before(deadline) {
		if err := pool.QueryRow(context.Background(), sql, args...).Scan(&got); err == nil && got == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("after %v, %s gives %q, not %q", within, sql, got, want)
}

// name is a queue or kind name of this test.
func name(t *testing.T, suffix string) string {
	return strings.ToLower(t.Name()) + "_" + suffix + runID
}

// run makes the names of one run of the tests its own.
var runID = fmt.Sprintf("_%x", time.Now().UnixNano()%(1<<32))

// tally counts calls by key.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func newTally() *tally { return &tally{n: map[string]int{}} }

func (c *tally) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[fmt.Sprintf(format, args...)]++
}

func (c *tally) get(format string, args ...any) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[fmt.Sprintf(format, args...)]
}
