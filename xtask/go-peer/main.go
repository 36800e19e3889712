// Command go-asynq-peer measures Go asynq (github.com/hibiken/asynq) on a private Redis, so that
// `cargo xtask bench --go` can set its throughput beside ours, in the same run, on the same Redis.
//
//	go-asynq-peer run <N> <concurrency>
//	go-asynq-peer enqueue <N>
//	go-asynq-peer drain <N> <concurrency> [<empty queues> <max seconds>]
//	go-asynq-peer fail <N> <concurrency>
//	go-asynq-peer bulk <N> archive|delete|run|remove
//	go-asynq-peer idle <seconds> <concurrency> <servers> [<empty queues>]
//	go-asynq-peer idle-aggregator <seconds> <concurrency>
//	go-asynq-peer enqueue-concurrent <N> <producers>
//	go-asynq-peer group-reads <groups>
//	go-asynq-peer pickup-latency <samples> <max seconds> <concurrency> [<empty queues>]
//	go-asynq-peer stream <N> <producers> <concurrency> <rate>
//
// `run` speaks the same protocol as the `asynq` 0.1.8 peer in ../shared/peers: it FLUSHALLs the
// Redis at REDIS_URL, enqueues N no-op tasks (40-byte payload, queue "default") one at a time,
// then starts a Go asynq server with the given concurrency and times until
// asynq:{default}:processed reaches N. `enqueue` and `drain` are its two phases on their own, so
// that the benchmark can measure Redis and the process around each: `enqueue` flushes first,
// `drain` runs on the queue an `enqueue` left. Each prints one line with its phases' numbers:
//
//	RESULT n=.. enqueue_s=.. enqueue_tps=.. conc=.. process_s=.. process_tps=.. handler_calls=..
//
// The other commands do the work of more of the Rust bench's scenarios, as its twins (on the
// queues and tasks its `fill`, `fill-failing`, `fill-scheduled` or `fill-groups` left):
//
//   - `drain` with empty queues serves that many more, "empty-0" to "empty-<k-1>", all of the
//     busy queue's weight, and stops after max seconds if N tasks have not been processed by
//     then: its rate is of those processed.
//   - `fail` is `drain` with a handler that always fails (the tasks have no retries: each is
//     archived at its first failure).
//   - `bulk` times one operator action of Go's Inspector: archive or delete every pending task,
//     run every scheduled one, or remove the queue by force: `bulk_s=.. bulk_tps=.. affected=..`.
//   - `idle` runs that many servers with no work for that many seconds, each with its own
//     connection, on the three idle queues (critical 6, default 3, low 1), or with empty queues
//     on "default" and "empty-0" to "empty-<k-1>", all of weight 1; Redis is measured outside.
//   - `idle-aggregator` runs one server with a group aggregator on "default" whose grace period
//     (an hour) no group reaches.
//   - `enqueue-concurrent` enqueues N tasks from that many producers sharing one client.
//   - `group-reads` times Go's Inspector reading a queue of that many groups, three times each,
//     and prints each read's median as `<read>_ms=..`: `queue_info` (GetQueueInfo, what
//     `asynq stats` and `queue inspect` read), `queues_and_info` (every queue's info, as a
//     metrics scrape reads) and `groups` (Groups, `asynq group ls`).
//   - `pickup-latency` runs a server on "default" (and that many empty queues beside it), then
//     enqueues one task at a time, 5 ms after the last one started, and times each from just
//     before its enqueue to the start of its handler, until it has that many samples or that
//     many seconds have passed: `samples=.. p50=.. p99=..` (milliseconds, nearest rank).
//   - `stream` runs a server while that many producers sharing one client enqueue N tasks at an
//     offered load of `rate` tasks/s in all (0: as fast as they can), by the same fixed
//     timetable (task i is due i/rate seconds after the start), timed from the server's start
//     until all are processed; each payload carries the time of its send, and the handler times
//     its pickup: `processed=.. process_s=.. process_tps=.. offered=.. p50=.. p99=..`.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// The same 40 bytes as the other peer's payload.
var payload = []byte(`{"user_id":1234567,"action":"noop-bnch"}`)

const usage = "usage: go-asynq-peer run <N> <concurrency> | enqueue <N> | " +
	"drain <N> <concurrency> [<empty queues> <max seconds>] | fail <N> <concurrency> | " +
	"bulk <N> archive|delete|run|remove | " +
	"idle <seconds> <concurrency> <servers> [<empty queues>] | idle-aggregator <seconds> <concurrency> | " +
	"enqueue-concurrent <N> <producers> | group-reads <groups> | " +
	"pickup-latency <samples> <max seconds> <concurrency> [<empty queues>] | " +
	"stream <N> <producers> <concurrency> <rate>"

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
		fields = append(enqueue(opt, monitor, n), drain(opt, monitor, n, intArg(3, 10), 0, 0, nil)...)
	case "enqueue":
		fields = enqueue(opt, monitor, n)
	case "drain":
		var empty, maxSeconds int
		if len(os.Args) > 4 {
			empty, maxSeconds = countArg(4), intArg(5, 0)
		}
		fields = drain(opt, monitor, n, intArg(3, 10), empty, time.Duration(maxSeconds)*time.Second, nil)
	case "fail":
		fields = drain(opt, monitor, n, intArg(3, 10), 0, 0, errors.New("the bench handler always fails"))
	case "bulk":
		if len(os.Args) != 4 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		fields = bulk(opt, os.Args[3], n)
	case "idle":
		empty := 0
		if len(os.Args) > 5 {
			empty = countArg(5)
		}
		fields = idle(opt, time.Duration(n)*time.Second, intArg(3, 10), intArg(4, 1), empty)
	case "idle-aggregator":
		fields = idleAggregator(opt, time.Duration(n)*time.Second, intArg(3, 10))
	case "enqueue-concurrent":
		fields = enqueueConcurrent(opt, monitor, n, intArg(3, 64))
	case "group-reads":
		fields = groupReads(opt, n)
	case "pickup-latency":
		empty := 0
		if len(os.Args) > 5 {
			empty = countArg(5)
		}
		fields = pickupLatency(opt, n, time.Duration(intArg(3, 20))*time.Second, intArg(4, 10), empty)
	case "stream":
		fields = stream(opt, monitor, n, intArg(3, 16), intArg(4, 10), float64(countArg(5)))
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

// drain runs a server with the given concurrency, serving the busy queue and `empty` empty
// ones, until the queue's processed counter reaches n or, with a positive maxTime, that long
// has passed. Its handler returns `failure` (nil: it succeeds).
func drain(opt asynq.RedisConnOpt, monitor redis.UniversalClient, n, concurrency, empty int, maxTime time.Duration, failure error) []string {
	ctx := context.Background()
	var calls atomic.Int64
	server := asynq.NewServer(opt, asynq.Config{
		Concurrency: concurrency,
		Queues:      besideEmpty(empty),
		Logger:      quietLogger{},
	})
	start := time.Now()
	if err := server.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		calls.Add(1)
		return failure
	})); err != nil {
		log.Fatalf("server: %v", err)
	}
	processed := 0
	for processed < n && (maxTime <= 0 || time.Since(start) < maxTime) {
		time.Sleep(5 * time.Millisecond)
		var err error
		processed, err = monitor.Get(ctx, "asynq:{default}:processed").Int()
		if err != nil && err != redis.Nil {
			log.Fatalf("GET processed: %v", err)
		}
	}
	seconds := time.Since(start).Seconds()
	return []string{
		fmt.Sprintf("conc=%d", concurrency),
		fmt.Sprintf("processed=%d", processed),
		fmt.Sprintf("process_s=%.3f", seconds),
		fmt.Sprintf("process_tps=%.0f", float64(processed)/seconds),
		fmt.Sprintf("handler_calls=%d", calls.Load()),
	}
}

// besideEmpty is the queue "default" and `empty` empty queues, all of weight 1.
func besideEmpty(empty int) map[string]int {
	queues := map[string]int{"default": 1}
	for i := 0; i < empty; i++ {
		queues[fmt.Sprintf("empty-%d", i)] = 1
	}
	return queues
}

// idle runs `servers` servers with no work for `duration`: on the three idle queues, or with
// `empty` > 0 on "default" beside that many empty ones.
func idle(opt asynq.RedisConnOpt, duration time.Duration, concurrency, servers, empty int) []string {
	queues := map[string]int{"critical": 6, "default": 3, "low": 1}
	if empty > 0 {
		queues = besideEmpty(empty)
	}
	for i := 0; i < servers; i++ {
		server := asynq.NewServer(opt, asynq.Config{Concurrency: concurrency, Queues: queues, Logger: quietLogger{}})
		if err := server.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil })); err != nil {
			log.Fatalf("server %d: %v", i, err)
		}
	}
	time.Sleep(duration)
	return []string{fmt.Sprintf("conc=%d", concurrency), fmt.Sprintf("servers=%d", servers), fmt.Sprintf("queues=%d", len(queues))}
}

// idleAggregator runs a server with a group aggregator on "default" for `duration`, with a grace
// period of an hour, so that no group of the Rust bench's `fill-groups` is ever ready.
func idleAggregator(opt asynq.RedisConnOpt, duration time.Duration, concurrency int) []string {
	server := asynq.NewServer(opt, asynq.Config{
		Concurrency:      concurrency,
		Queues:           map[string]int{"default": 1},
		GroupGracePeriod: time.Hour,
		GroupAggregator: asynq.GroupAggregatorFunc(func(group string, tasks []*asynq.Task) *asynq.Task {
			return asynq.NewTask("bench:noop", payload)
		}),
		Logger: quietLogger{},
	})
	if err := server.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil })); err != nil {
		log.Fatalf("server: %v", err)
	}
	time.Sleep(duration)
	return []string{fmt.Sprintf("conc=%d", concurrency)}
}

// enqueueConcurrent flushes Redis, then enqueues n tasks from `producers` goroutines sharing
// one client, each awaiting its enqueue before the next.
func enqueueConcurrent(opt asynq.RedisConnOpt, monitor redis.UniversalClient, n, producers int) []string {
	if err := monitor.FlushAll(context.Background()).Err(); err != nil {
		log.Fatalf("FLUSHALL: %v", err)
	}
	client := asynq.NewClient(opt)
	var next atomic.Int64
	var done sync.WaitGroup
	start := time.Now()
	for p := 0; p < producers; p++ {
		done.Add(1)
		go func() {
			defer done.Done()
			for next.Add(1) <= int64(n) {
				if _, err := client.Enqueue(asynq.NewTask("bench:noop", payload)); err != nil {
					log.Fatalf("enqueue: %v", err)
				}
			}
		}()
	}
	done.Wait()
	seconds := time.Since(start).Seconds()
	return []string{
		fmt.Sprintf("conc=%d", producers),
		fmt.Sprintf("enqueue_s=%.3f", seconds),
		fmt.Sprintf("enqueue_tps=%.0f", float64(n)/seconds),
	}
}

// groupReads times Go's Inspector reading the queue "default" of `groups` groups, each read three
// times; it prints each read's median in milliseconds.
func groupReads(opt asynq.RedisConnOpt, groups int) []string {
	inspector := asynq.NewInspector(opt)
	defer inspector.Close()
	reads := []struct {
		name string
		read func() error
	}{
		{"queue_info", func() error {
			info, err := inspector.GetQueueInfo("default")
			if err == nil && info.Groups != groups {
				err = fmt.Errorf("GetQueueInfo counted %d groups of %d", info.Groups, groups)
			}
			return err
		}},
		{"queues_and_info", func() error {
			queues, err := inspector.Queues()
			for _, queue := range queues {
				if err == nil {
					_, err = inspector.GetQueueInfo(queue)
				}
			}
			return err
		}},
		{"groups", func() error {
			listed, err := inspector.Groups("default")
			if err == nil && len(listed) != groups {
				err = fmt.Errorf("Groups listed %d groups of %d", len(listed), groups)
			}
			return err
		}},
	}
	var fields []string
	for _, read := range reads {
		var took []float64
		for i := 0; i < 3; i++ {
			start := time.Now()
			if err := read.read(); err != nil {
				log.Fatalf("%s: %v", read.name, err)
			}
			took = append(took, time.Since(start).Seconds()*1e3)
		}
		sort.Float64s(took)
		fields = append(fields, fmt.Sprintf("%s_ms=%.3f", read.name, took[1]))
	}
	return fields
}

// pickupLatency samples the time from just before an enqueue to the start of its handler on an
// idle server, one task at a time.
func pickupLatency(opt asynq.RedisConnOpt, samples int, maxTime time.Duration, concurrency, empty int) []string {
	started := make(chan time.Time, 1)
	server := asynq.NewServer(opt, asynq.Config{Concurrency: concurrency, Queues: besideEmpty(empty), Logger: quietLogger{}})
	if err := server.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		started <- time.Now()
		return nil
	})); err != nil {
		log.Fatalf("server: %v", err)
	}
	client := asynq.NewClient(opt)
	var latencies []float64
	begin := time.Now()
	for len(latencies) < samples && time.Since(begin) < maxTime {
		time.Sleep(5 * time.Millisecond)
		enqueued := time.Now()
		if _, err := client.Enqueue(asynq.NewTask("bench:noop", payload)); err != nil {
			log.Fatalf("enqueue: %v", err)
		}
		select {
		case at := <-started:
			latencies = append(latencies, at.Sub(enqueued).Seconds()*1e3)
		case <-time.After(30 * time.Second):
			log.Fatalf("no handler started within 30 s of an enqueue")
		}
	}
	return append([]string{fmt.Sprintf("conc=%d", concurrency), fmt.Sprintf("samples=%d", len(latencies))},
		percentiles(latencies)...)
}

// percentiles are the p50 and p99 of `latencies` (nearest rank), which it sorts.
func percentiles(latencies []float64) []string {
	sort.Float64s(latencies)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p / 100 * float64(len(latencies))))
		return latencies[max(min(i, len(latencies)), 1)-1]
	}
	return []string{fmt.Sprintf("p50=%.3f", rank(50)), fmt.Sprintf("p99=%.3f", rank(99))}
}

// stream runs a server while `producers` goroutines sharing one client enqueue n tasks at an
// offered load of `rate` tasks/s (0: as fast as they can), and times each task's pickup.
func stream(opt asynq.RedisConnOpt, monitor redis.UniversalClient, n, producers, concurrency int, rate float64) []string {
	epoch := time.Now()
	var mu sync.Mutex
	latencies := make([]float64, 0, n)
	server := asynq.NewServer(opt, asynq.Config{Concurrency: concurrency, Queues: besideEmpty(0), Logger: quietLogger{}})
	start := time.Now()
	if err := server.Start(asynq.HandlerFunc(func(_ context.Context, task *asynq.Task) error {
		started := time.Since(epoch).Microseconds()
		if sent, err := strconv.ParseInt(strings.TrimSpace(string(task.Payload())), 10, 64); err == nil {
			mu.Lock()
			latencies = append(latencies, float64(started-sent)/1e3)
			mu.Unlock()
		}
		return nil
	})); err != nil {
		log.Fatalf("server: %v", err)
	}
	client := asynq.NewClient(opt)
	begin := time.Now()
	var sending sync.WaitGroup
	for p := 0; p < producers; p++ {
		sending.Add(1)
		go func() {
			defer sending.Done()
			for i := p; i < n; i += producers {
				if rate > 0 {
					time.Sleep(time.Until(begin.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
				}
				payload := fmt.Sprintf("%40d", time.Since(epoch).Microseconds())
				if _, err := client.Enqueue(asynq.NewTask("bench:noop", []byte(payload))); err != nil {
					log.Fatalf("enqueue: %v", err)
				}
			}
		}()
	}
	sending.Wait()
	offered := float64(n) / time.Since(begin).Seconds()
	for processed := 0; processed < n; {
		time.Sleep(5 * time.Millisecond)
		var err error
		processed, err = monitor.Get(context.Background(), "asynq:{default}:processed").Int()
		if err != nil && err != redis.Nil {
			log.Fatalf("GET processed: %v", err)
		}
	}
	seconds := time.Since(start).Seconds()
	mu.Lock()
	defer mu.Unlock()
	return append([]string{
		fmt.Sprintf("conc=%d", concurrency),
		fmt.Sprintf("processed=%d", n),
		fmt.Sprintf("process_s=%.3f", seconds),
		fmt.Sprintf("process_tps=%.0f", float64(n)/seconds),
		fmt.Sprintf("offered=%.0f", offered),
	}, percentiles(latencies)...)
}

// bulk times one bulk action of Go's Inspector on the queue "default", which holds n tasks.
func bulk(opt asynq.RedisConnOpt, action string, n int) []string {
	inspector := asynq.NewInspector(opt)
	defer inspector.Close()
	start := time.Now()
	var affected int
	var err error
	switch action {
	case "archive":
		affected, err = inspector.ArchiveAllPendingTasks("default")
	case "delete":
		affected, err = inspector.DeleteAllPendingTasks("default")
	case "run":
		affected, err = inspector.RunAllScheduledTasks("default")
	case "remove":
		if err = inspector.DeleteQueue("default", true); err == nil {
			affected = n
		}
	default:
		log.Fatalf("bulk: unknown action %q; want archive, delete, run or remove", action)
	}
	if err != nil {
		log.Fatalf("bulk %s: %v", action, err)
	}
	seconds := time.Since(start).Seconds()
	return []string{
		fmt.Sprintf("bulk_s=%.3f", seconds),
		fmt.Sprintf("bulk_tps=%.0f", float64(affected)/seconds),
		fmt.Sprintf("affected=%d", affected),
	}
}

// countArg is argument i, a number that may be 0.
func countArg(i int) int {
	v, err := strconv.Atoi(os.Args[i])
	if err != nil || v < 0 {
		log.Fatalf("argument %d: want a number of 0 or more, got %q", i, os.Args[i])
	}
	return v
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
