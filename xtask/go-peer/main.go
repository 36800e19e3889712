// Command go-asynq-peer measures Go asynq (github.com/hibiken/asynq) on a private Redis, so that
// `cargo xtask bench --go` can set its throughput beside ours, in the same run, on the same Redis.
//
//	go-asynq-peer run <N> <concurrency>
//	go-asynq-peer enqueue <N>
//	go-asynq-peer drain <N> <concurrency>
//
// `run` speaks the same protocol as the `asynq` 0.1.8 peer in ../shared/peers: it FLUSHALLs the
// Redis at REDIS_URL, enqueues N no-op tasks (40-byte payload, queue "default") one at a time,
// then starts a Go asynq server with the given concurrency and times until
// asynq:{default}:processed reaches N. `enqueue` and `drain` are its two phases on their own, so
// that the benchmark can measure Redis and the process around each: `enqueue` flushes first,
// `drain` runs on the queue an `enqueue` left. Each prints one line with its phases' numbers:
//
//	RESULT n=.. enqueue_s=.. enqueue_tps=.. conc=.. process_s=.. process_tps=.. handler_calls=..
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

const usage = "usage: go-asynq-peer run <N> <concurrency> | enqueue <N> | drain <N> <concurrency>"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	n := intArg(2, 100000)
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6391"
	}
	// asynq's parser takes a path only when it names a database.
	opt, err := asynq.ParseRedisURI(strings.TrimSuffix(url, "/"))
	if err != nil {
		log.Fatalf("REDIS_URL %q: %v", url, err)
	}
	monitor := opt.MakeRedisClient().(redis.UniversalClient)

	var fields []string
	switch os.Args[1] {
	case "run":
		fields = append(enqueue(opt, monitor, n), drain(opt, monitor, n, intArg(3, 10))...)
	case "enqueue":
		fields = enqueue(opt, monitor, n)
	case "drain":
		fields = drain(opt, monitor, n, intArg(3, 10))
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	fmt.Printf("RESULT n=%d %s\n", n, strings.Join(fields, " "))
	os.Exit(0) // the measurement is over; do not time the server's shutdown
}

// enqueue flushes Redis, then enqueues n tasks one at a time, each awaited before the next.
func enqueue(opt asynq.RedisConnOpt, monitor redis.UniversalClient, n int) []string {
	if err := monitor.FlushAll(context.Background()).Err(); err != nil {
		log.Fatalf("FLUSHALL: %v", err)
	}
	client := asynq.NewClient(opt)
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := client.Enqueue(asynq.NewTask("bench:noop", payload)); err != nil {
			log.Fatalf("enqueue: %v", err)
		}
	}
	seconds := time.Since(start).Seconds()
	return []string{fmt.Sprintf("enqueue_s=%.3f", seconds), fmt.Sprintf("enqueue_tps=%.0f", float64(n)/seconds)}
}

// drain runs a server with the given concurrency until the queue's processed counter reaches n.
func drain(opt asynq.RedisConnOpt, monitor redis.UniversalClient, n, concurrency int) []string {
	ctx := context.Background()
	var calls atomic.Int64
	server := asynq.NewServer(opt, asynq.Config{
		Concurrency: concurrency,
		Queues:      map[string]int{"default": 1},
		Logger:      quietLogger{},
	})
	start := time.Now()
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
	seconds := time.Since(start).Seconds()
	return []string{
		fmt.Sprintf("conc=%d", concurrency),
		fmt.Sprintf("process_s=%.3f", seconds),
		fmt.Sprintf("process_tps=%.0f", float64(n)/seconds),
		fmt.Sprintf("handler_calls=%d", calls.Load()),
	}
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
