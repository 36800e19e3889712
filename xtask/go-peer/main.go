// Command go-asynq-peer measures Go asynq (github.com/hibiken/asynq) on a private Redis, so that
// `cargo xtask bench --go` can set its throughput beside ours, in the same run, on the same Redis.
//
// It speaks the same protocol as the `asynq` 0.1.8 peer in ../shared/peers:
//
//	go-asynq-peer run <N> <concurrency>
//
// FLUSHALLs the Redis at REDIS_URL, enqueues N no-op tasks (40-byte payload, queue "default") one
// at a time, then starts a Go asynq server with the given concurrency and times until
// asynq:{default}:processed reaches N. It prints one line:
//
//	RESULT n=.. conc=.. enqueue_s=.. enqueue_tps=.. process_s=.. process_tps=.. handler_calls=..
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// The same 40 bytes as the other peer's payload.
var payload = []byte(`{"user_id":1234567,"action":"noop-bnch"}`)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "run" {
		fmt.Fprintln(os.Stderr, "usage: go-asynq-peer run <N> <concurrency>")
		os.Exit(2)
	}
	n := intArg(2, 100000)
	concurrency := intArg(3, 10)
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6391"
	}
	// asynq's parser takes a path only when it names a database.
	opt, err := asynq.ParseRedisURI(strings.TrimSuffix(url, "/"))
	if err != nil {
		log.Fatalf("REDIS_URL %q: %v", url, err)
	}
	ctx := context.Background()
	monitor := opt.MakeRedisClient().(redis.UniversalClient)
	if err := monitor.FlushAll(ctx).Err(); err != nil {
		log.Fatalf("FLUSHALL: %v", err)
	}

	client := asynq.NewClient(opt)
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := client.Enqueue(asynq.NewTask("bench:noop", payload)); err != nil {
			log.Fatalf("enqueue: %v", err)
		}
	}
	enqueueS := time.Since(start).Seconds()

	var calls atomic.Int64
	server := asynq.NewServer(opt, asynq.Config{
		Concurrency: concurrency,
		Queues:      map[string]int{"default": 1},
		Logger:      quietLogger{},
	})
	start = time.Now()
	if err := server.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		calls.Add(1)
		return nil
	})); err != nil {
		log.Fatalf("server: %v", err)
	}
	for {
		processed, err := monitor.Get(ctx, "asynq:{default}:processed").Int()
		if err != nil && err != redis.Nil {
			log.Fatalf("GET processed: %v", err)
		}
		if processed >= n {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	processS := time.Since(start).Seconds()
	fmt.Printf("RESULT n=%d conc=%d enqueue_s=%.3f enqueue_tps=%.0f process_s=%.3f process_tps=%.0f handler_calls=%d\n",
		n, concurrency, enqueueS, float64(n)/enqueueS, processS, float64(n)/processS, calls.Load())
	os.Exit(0) // the measurement is over; do not time the server's shutdown
}

func intArg(i, fallback int) int {
	if len(os.Args) <= i {
		return fallback
	}
	v, err := strconv.Atoi(os.Args[i])
	if err != nil || v <= 0 {
		log.Fatalf("argument %d: want a positive number, got %q", i, os.Args[i])
	}
	return v
}

// quietLogger drops the server's start-up and shutdown lines, which would interleave with the
// benchmark's own output.
type quietLogger struct{}

func (quietLogger) Debug(...interface{}) {}
func (quietLogger) Info(...interface{})  {}
func (quietLogger) Warn(...interface{})  {}
func (quietLogger) Error(args ...interface{}) {
	fmt.Fprintln(os.Stderr, args...)
}
func (quietLogger) Fatal(args ...interface{}) {
	fmt.Fprintln(os.Stderr, args...)
	os.Exit(1)
}
