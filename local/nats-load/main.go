// Command rmqbench-nats-load is rmqbench's load client for NATS JetStream (local/nats-load.ts runs it).
//
// It creates the benchmark stream (storage, replicas, retention, limits as the workload asks), one durable
// consumer that every consumer of the workload shares (pull: each fetches from it; push: a deliver group), and
// then runs the producers: asynchronous publishes with a bounded window of unacknowledged messages, at a rate or
// flat out, for a fixed number of messages or for a duration. Every producer and consumer has its own connection.
//
// Why not `nats bench` (natscli v0.5.0): it prints one total rate per client at the end (its CSV has one row per
// client) and, for asynchronous publishes, the latency of a whole batch operation; it reports neither per-second
// rates nor an end-to-end latency, both of which rmqbench's results hold for every broker.
//
// Output: JSON lines on stdout, one object each (core/nats/nats-load-output.ts parses them):
//
//	{"type":"start",...}     the settings, once the stream and consumers are ready
//	{"type":"interval",...}  every second: messages published, acknowledged (confirmed), refused (nacked) and
//	                         received in the interval, and the latency percentiles of the interval (microseconds)
//	{"type":"summary",...}   totals and whole-run percentiles, once everything sent was received or the drain ended
//	{"type":"error",...}     what went wrong; the exit code is then 1
//
// Latencies: confirm latency is PublishAsync to the stream's acknowledgement; consumer latency is PublishAsync to
// the consumer's callback, from the send time carried in the first 8 bytes of the body (producers and consumers
// share this process's monotonic clock), as PerfTest carries its timestamp in the body.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Version of this client's output format, printed in the start line.
const Version = "1"

type settings struct {
	Servers      []string `json:"servers"`
	Stream       string   `json:"stream"`
	Subject      string   `json:"subject"`
	Producers    int      `json:"producers"`
	Consumers    int      `json:"consumers"`
	Size         int      `json:"messageSizeBytes"`
	Rate         int      `json:"ratePerProducer"`
	Messages     int      `json:"messagesPerProducer"`
	Duration     int      `json:"durationSeconds"`
	Drain        int      `json:"drainSeconds"`
	ConsumerMode string   `json:"consumerMode"`
	AckPolicy    string   `json:"ackPolicy"`
	Storage      string   `json:"storage"`
	Replicas     int      `json:"replicas"`
	MaxBytes     int64    `json:"maxBytes"`
	MaxMsgs      int64    `json:"maxMsgs"`
	Retention    string   `json:"retention"`
	Window       int      `json:"publishWindow"`
	KeepStream   bool     `json:"-"`
}

// out writes the JSON lines to stdout and, with -output, to that file too: written by this process itself, the file
// is complete once it exits, whatever its parent has read of the pipe by then.
var out = json.NewEncoder(os.Stdout)
var outMu sync.Mutex

func emit(value map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	_ = out.Encode(value)
}

func fail(format string, args ...any) {
	emit(map[string]any{"type": "error", "message": fmt.Sprintf(format, args...)})
	os.Exit(1)
}

// verify holds the -verify mode's own flags (verify.go).
var verify struct {
	on         bool
	rate       int
	ackTimeout time.Duration
	seconds    int
}

func parseFlags() settings {
	var s settings
	flag.BoolVar(&verify.on, "verify", false, "run the lost-message verifier (verify.go) instead of the load")
	flag.IntVar(&verify.rate, "verify-rate", 200, "-verify: messages per second")
	flag.IntVar(&verify.seconds, "verify-seconds", 0,
		"-verify: finish by itself this many seconds after the start, as on SIGTERM (0: only on SIGTERM)")
	flag.DurationVar(&verify.ackTimeout, "ack-timeout", 5*time.Second, "wait for a publish's acknowledgement")
	var servers string
	flag.StringVar(&servers, "servers", "nats://127.0.0.1:4222", "comma-separated server URLs")
	flag.StringVar(&s.Stream, "stream", "rmqbench", "stream name")
	flag.StringVar(&s.Subject, "subject", "rmqbench.load", "subject the producers publish to")
	flag.IntVar(&s.Producers, "producers", 1, "producers, each on its own connection")
	flag.IntVar(&s.Consumers, "consumers", 1, "consumers sharing one durable consumer, each on its own connection")
	flag.IntVar(&s.Size, "size", 12, "message body size in bytes (at least 8: the send time)")
	flag.IntVar(&s.Rate, "rate", 0, "messages per second per producer (0: flat out)")
	flag.IntVar(&s.Messages, "messages", 0, "messages per producer (0: send for -duration seconds)")
	flag.IntVar(&s.Duration, "duration", 60, "seconds to send for when -messages is 0")
	flag.IntVar(&s.Drain, "drain", 10, "seconds without a delivery after which the consumers stop once sending ended")
	flag.StringVar(&s.ConsumerMode, "consumer-mode", "pull", "pull or push")
	flag.StringVar(&s.AckPolicy, "ack", "explicit", "explicit, none or all")
	flag.StringVar(&s.Storage, "storage", "file", "file or memory")
	flag.IntVar(&s.Replicas, "replicas", 1, "stream replicas")
	flag.Int64Var(&s.MaxBytes, "max-bytes", -1, "stream max_bytes (-1: unlimited)")
	flag.Int64Var(&s.MaxMsgs, "max-msgs", -1, "stream max_msgs (-1: unlimited)")
	flag.StringVar(&s.Retention, "retention", "limits", "limits, interest or workqueue")
	flag.IntVar(&s.Window, "window", 500, "unacknowledged asynchronous publishes per producer")
	flag.BoolVar(&s.KeepStream, "keep-stream", false, "leave the stream in place at the end")
	output := flag.String("output", "", "also write the JSON lines to this file")
	flag.Parse()
	if *output != "" {
		file, err := os.Create(*output)
		if err != nil {
			fail("-output: %v", err)
		}
		out = json.NewEncoder(io.MultiWriter(os.Stdout, file))
	}
	s.Servers = strings.Split(servers, ",")
	if s.Size < 8 {
		fail("-size must be at least 8 (the body carries the send time), got %d", s.Size)
	}
	if s.Producers < 1 {
		fail("-producers must be at least 1, got %d", s.Producers)
	}
	if verify.on && verify.rate < 1 {
		fail("-verify-rate must be at least 1, got %d", verify.rate)
	}
	if verify.seconds < 0 {
		fail("-verify-seconds must be 0 (finish on SIGTERM) or at least 1, got %d", verify.seconds)
	}
	if s.Messages == 0 && s.Duration < 1 {
		fail("give -messages or a -duration of at least 1 s")
	}
	return s
}

func streamConfig(s settings) (jetstream.StreamConfig, error) {
	cfg := jetstream.StreamConfig{
		Name:     s.Stream,
		Subjects: []string{s.Subject},
		Replicas: s.Replicas,
		MaxBytes: s.MaxBytes,
		MaxMsgs:  s.MaxMsgs,
		Discard:  jetstream.DiscardOld,
	}
	switch s.Storage {
	case "file":
		cfg.Storage = jetstream.FileStorage
	case "memory":
		cfg.Storage = jetstream.MemoryStorage
	default:
		return cfg, fmt.Errorf("unknown -storage %q", s.Storage)
	}
	switch s.Retention {
	case "limits":
		cfg.Retention = jetstream.LimitsPolicy
	case "interest":
		cfg.Retention = jetstream.InterestPolicy
	case "workqueue":
		cfg.Retention = jetstream.WorkQueuePolicy
	default:
		return cfg, fmt.Errorf("unknown -retention %q", s.Retention)
	}
	return cfg, nil
}

func consumerConfig(s settings) (jetstream.ConsumerConfig, error) {
	cfg := jetstream.ConsumerConfig{Durable: "rmqbench", DeliverPolicy: jetstream.DeliverAllPolicy}
	switch s.AckPolicy {
	case "explicit":
		cfg.AckPolicy = jetstream.AckExplicitPolicy
	case "none":
		cfg.AckPolicy = jetstream.AckNonePolicy
	case "all":
		cfg.AckPolicy = jetstream.AckAllPolicy
	default:
		return cfg, fmt.Errorf("unknown -ack %q", s.AckPolicy)
	}
	if s.ConsumerMode == "push" {
		cfg.DeliverSubject = "_rmqbench.deliver." + s.Stream
		cfg.DeliverGroup = "rmqbench"
	} else if s.ConsumerMode != "pull" {
		return cfg, fmt.Errorf("unknown -consumer-mode %q", s.ConsumerMode)
	}
	return cfg, nil
}

// counters of the whole run; the interval figures are differences of successive snapshots.
type counters struct {
	published, confirmed, nacked, received atomic.Int64
	lastConfirmNs, lastReceiveNs           atomic.Int64
}

type run struct {
	s           settings
	start       time.Time
	c           counters
	mu          sync.Mutex
	confirmHist *histogram // this interval
	receiveHist *histogram
	confirmAll  *histogram // the whole run
	receiveAll  *histogram
	firstError  atomic.Value
}

func (r *run) sinceStart() int64 { return int64(time.Since(r.start)) }

func (r *run) recordConfirm(latencyNs int64) {
	us := latencyNs / 1000
	r.mu.Lock()
	r.confirmHist.record(us)
	r.confirmAll.record(us)
	r.mu.Unlock()
}

func (r *run) recordReceive(latencyNs int64) {
	us := latencyNs / 1000
	r.mu.Lock()
	r.receiveHist.record(us)
	r.receiveAll.record(us)
	r.mu.Unlock()
}

func (r *run) noteError(err error) {
	if err != nil && r.firstError.Load() == nil {
		r.firstError.Store(err.Error())
	}
}

// connect opens one client's connection; it reconnects for ever, every 250 ms, to any server of the cluster.
func connect(s settings, name string, extra ...nats.Option) (*nats.Conn, error) {
	options := append([]nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)},
		extra...)
	return nats.Connect(strings.Join(s.Servers, ","), options...)
}

func main() {
	s := parseFlags()
	if verify.on {
		runVerifier(s, verify.rate, verify.ackTimeout, verify.seconds)
		return
	}
	streamCfg, err := streamConfig(s)
	if err != nil {
		fail("%v", err)
	}
	consumerCfg, err := consumerConfig(s)
	if err != nil {
		fail("%v", err)
	}
	admin, err := connect(s, "rmqbench-admin")
	if err != nil {
		fail("connect to %s: %v", strings.Join(s.Servers, ","), err)
	}
	defer admin.Close()
	adminJs, err := jetstream.New(admin)
	if err != nil {
		fail("jetstream: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_ = adminJs.DeleteStream(ctx, s.Stream)
	if _, err := adminJs.CreateStream(ctx, streamCfg); err != nil {
		cancel()
		fail("create stream %s (replicas %d, %s storage, %s retention): %v", s.Stream, s.Replicas, s.Storage,
			s.Retention, err)
	}
	if s.Consumers > 0 {
		if s.ConsumerMode == "push" {
			_, err = adminJs.CreateOrUpdatePushConsumer(ctx, s.Stream, consumerCfg)
		} else {
			_, err = adminJs.CreateOrUpdateConsumer(ctx, s.Stream, consumerCfg)
		}
		if err != nil {
			cancel()
			deleteStream(adminJs, s)
			fail("create %s consumer (ack %s) on stream %s: %v", s.ConsumerMode, s.AckPolicy, s.Stream, err)
		}
	}
	cancel()

	r := &run{s: s, confirmHist: newHistogram(), receiveHist: newHistogram(), confirmAll: newHistogram(),
		receiveAll: newHistogram()}
	r.start = time.Now()
	stopConsumers, err := startConsumers(r)
	if err != nil {
		deleteStream(adminJs, s)
		fail("%v", err)
	}
	emit(map[string]any{"type": "start", "version": Version, "settings": s})
	// The clock of the intervals starts with the producers.
	r.start = time.Now()
	done := make(chan struct{})
	var ticks sync.WaitGroup
	ticks.Add(1)
	go func() {
		defer ticks.Done()
		r.tick(done)
	}()
	var producers sync.WaitGroup
	for index := 0; index < s.Producers; index++ {
		producers.Add(1)
		go func(index int) {
			defer producers.Done()
			if err := r.produce(index); err != nil {
				r.noteError(err)
			}
		}(index)
	}
	producers.Wait()
	sendSeconds := float64(r.c.lastConfirmNs.Load()) / 1e9
	drained := r.waitForConsumers()
	stopConsumers()
	close(done)
	ticks.Wait()
	if !s.KeepStream {
		deleteStream(adminJs, s)
	}
	r.summary(sendSeconds, drained)
}

func deleteStream(js jetstream.JetStream, s settings) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = js.DeleteStream(ctx, s.Stream)
}

type pending struct {
	future jetstream.PubAckFuture
	sentNs int64
}

// produce publishes one producer's share; a waiter goroutine takes the acknowledgements in order.
func (r *run) produce(index int) error {
	s := r.s
	nc, err := connect(s, fmt.Sprintf("rmqbench-producer-%d", index+1))
	if err != nil {
		return fmt.Errorf("producer %d: connect: %w", index+1, err)
	}
	defer nc.Close()
	// Without a timeout, a publish whose stream lost its leader (a fault) is never answered, the window fills and the
	// producer stalls for good; with it, the publish counts as refused (nacked) and the producer goes on.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(s.Window),
		jetstream.WithPublishAsyncTimeout(verify.ackTimeout))
	if err != nil {
		return err
	}
	futures := make(chan pending, s.Window*2)
	var waiter sync.WaitGroup
	waiter.Add(1)
	go func() {
		defer waiter.Done()
		for p := range futures {
			select {
			case <-p.future.Ok():
				now := r.sinceStart()
				r.c.confirmed.Add(1)
				storeMax(&r.c.lastConfirmNs, now)
				r.recordConfirm(now - p.sentNs)
			case err := <-p.future.Err():
				r.c.nacked.Add(1)
				r.noteError(err)
			}
		}
	}()
	body := make([]byte, s.Size)
	var interval time.Duration
	if s.Rate > 0 {
		interval = time.Second / time.Duration(s.Rate)
	}
	end := time.Duration(s.Duration) * time.Second
	for sent := 0; s.Messages == 0 || sent < s.Messages; sent++ {
		if interval > 0 {
			if wait := time.Duration(sent)*interval - time.Since(r.start); wait > 0 {
				time.Sleep(wait)
			}
		}
		now := r.sinceStart()
		if s.Messages == 0 && time.Duration(now) >= end {
			break
		}
		binary.BigEndian.PutUint64(body, uint64(now))
		future, err := js.PublishAsync(s.Subject, body, jetstream.WithStallWait(30*time.Second))
		if err != nil {
			r.c.nacked.Add(1)
			r.noteError(err)
			continue
		}
		r.c.published.Add(1)
		futures <- pending{future: future, sentNs: now}
	}
	close(futures)
	waiter.Wait()
	return nil
}

func storeMax(target *atomic.Int64, value int64) {
	for {
		current := target.Load()
		if value <= current || target.CompareAndSwap(current, value) {
			return
		}
	}
}

// startConsumers subscribes every consumer (each on its own connection) and returns what stops them.
func startConsumers(r *run) (func(), error) {
	s := r.s
	var stops []func()
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for index := 0; index < s.Consumers; index++ {
		nc, err := connect(s, fmt.Sprintf("rmqbench-consumer-%d", index+1))
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("consumer %d: connect: %w", index+1, err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			stopAll()
			return nil, err
		}
		var lastUnacked atomic.Pointer[jetstream.Msg]
		var count atomic.Int64
		handler := func(msg jetstream.Msg) {
			now := r.sinceStart()
			data := msg.Data()
			if len(data) >= 8 {
				r.recordReceive(now - int64(binary.BigEndian.Uint64(data)))
			}
			r.c.received.Add(1)
			storeMax(&r.c.lastReceiveNs, now)
			switch s.AckPolicy {
			case "explicit":
				_ = msg.Ack()
			case "all":
				// One acknowledgement for every 100 messages (and the last one when the consumer stops).
				if count.Add(1)%100 == 0 {
					_ = msg.Ack()
					lastUnacked.Store(nil)
				} else {
					lastUnacked.Store(&msg)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var consume jetstream.ConsumeContext
		if s.ConsumerMode == "push" {
			var consumer jetstream.PushConsumer
			consumer, err = js.PushConsumer(ctx, s.Stream, "rmqbench")
			if err == nil {
				consume, err = consumer.Consume(handler)
			}
		} else {
			var consumer jetstream.Consumer
			consumer, err = js.Consumer(ctx, s.Stream, "rmqbench")
			if err == nil {
				consume, err = consumer.Consume(handler, jetstream.PullMaxMessages(500), jetstream.PullExpiry(pullExpiry))
			}
		}
		cancel()
		if err != nil {
			nc.Close()
			stopAll()
			return nil, fmt.Errorf("consumer %d: %w", index+1, err)
		}
		stops = append(stops, func() {
			consume.Stop()
			if last := lastUnacked.Load(); last != nil {
				_ = (*last).Ack()
			}
			_ = nc.Drain()
		})
	}
	return stopAll, nil
}

// waitForConsumers waits until everything acknowledged was received, or until no delivery came for -drain seconds.
func (r *run) waitForConsumers() bool {
	if r.s.Consumers == 0 {
		return true
	}
	lastSeen, lastChange := r.c.received.Load(), time.Now()
	for {
		received := r.c.received.Load()
		if received >= r.c.confirmed.Load() {
			return true
		}
		if received != lastSeen {
			lastSeen, lastChange = received, time.Now()
		} else if time.Since(lastChange) > time.Duration(r.s.Drain)*time.Second {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type snapshot struct{ published, confirmed, nacked, received int64 }

func (r *run) snapshot() snapshot {
	return snapshot{r.c.published.Load(), r.c.confirmed.Load(), r.c.nacked.Load(), r.c.received.Load()}
}

// tick prints one interval line per second from the start, and the last, shorter interval when done closes.
func (r *run) tick(done chan struct{}) {
	previous, previousAt := snapshot{}, time.Duration(0)
	for second := 1; ; second++ {
		next := time.Duration(second) * time.Second
		timer := time.NewTimer(next - time.Since(r.start))
		finished := false
		select {
		case <-timer.C:
		case <-done:
			timer.Stop()
			finished = true
		}
		at := time.Since(r.start)
		if !finished {
			at = next
		}
		current := r.snapshot()
		r.mu.Lock()
		confirm, receive := r.confirmHist.percentiles(), r.receiveHist.percentiles()
		r.confirmHist, r.receiveHist = newHistogram(), newHistogram()
		r.mu.Unlock()
		line := map[string]any{
			"type":            "interval",
			"time":            round3(at.Seconds()),
			"intervalSeconds": round3((at - previousAt).Seconds()),
			"published":       current.published - previous.published,
			"confirmed":       current.confirmed - previous.confirmed,
			"nacked":          current.nacked - previous.nacked,
			"received":        current.received - previous.received,
		}
		if confirm != nil {
			line["confirmLatencyUs"] = confirm
		}
		if receive != nil {
			line["consumerLatencyUs"] = receive
		}
		emit(line)
		previous, previousAt = current, at
		if finished {
			return
		}
	}
}

func (r *run) summary(sendSeconds float64, drained bool) {
	current := r.snapshot()
	line := map[string]any{
		"type":           "summary",
		"elapsedSeconds": round3(time.Since(r.start).Seconds()),
		"sendSeconds":    round3(sendSeconds),
		"receiveSeconds": round3(float64(r.c.lastReceiveNs.Load()) / 1e9),
		"published":      current.published,
		"confirmed":      current.confirmed,
		"nacked":         current.nacked,
		"received":       current.received,
		"drained":        drained,
	}
	if p := r.confirmAll.percentiles(); p != nil {
		line["confirmLatencyUs"] = p
	}
	if p := r.receiveAll.percentiles(); p != nil {
		line["consumerLatencyUs"] = p
	}
	if first := r.firstError.Load(); first != nil {
		line["firstError"] = first
	}
	emit(line)
}

func round3(value float64) float64 { return float64(int64(value*1000+0.5)) / 1000 }

// histogram of microsecond values: exact below 256, then 128 buckets per power of two (under 1 % error).
type histogram struct {
	counts map[int]int64
	total  int64
	min    int64
}

func newHistogram() *histogram { return &histogram{counts: map[int]int64{}, min: -1} }

func bucketOf(value int64) int {
	if value < 256 {
		if value < 0 {
			return 0
		}
		return int(value)
	}
	shift := bits.Len64(uint64(value)) - 8
	return 256 + (shift-1)*128 + int(value>>shift) - 128
}

func valueOf(bucket int) int64 {
	if bucket < 256 {
		return int64(bucket)
	}
	shift := (bucket-256)/128 + 1
	mantissa := int64((bucket-256)%128 + 128)
	return mantissa<<shift + (int64(1)<<shift)/2
}

func (h *histogram) record(value int64) {
	if value < 0 {
		value = 0
	}
	h.counts[bucketOf(value)]++
	h.total++
	if h.min < 0 || value < h.min {
		h.min = value
	}
}

// percentiles in microseconds, or nil without values.
func (h *histogram) percentiles() map[string]int64 {
	if h.total == 0 {
		return nil
	}
	buckets := make([]int, 0, len(h.counts))
	for bucket := range h.counts {
		buckets = append(buckets, bucket)
	}
	sort.Ints(buckets)
	at := func(quantile float64) int64 {
		rank := int64(quantile*float64(h.total) + 0.5)
		if rank < 1 {
			rank = 1
		}
		var seen int64
		for _, bucket := range buckets {
			seen += h.counts[bucket]
			if seen >= rank {
				return valueOf(bucket)
			}
		}
		return valueOf(buckets[len(buckets)-1])
	}
	return map[string]int64{"min": h.min, "median": at(0.5), "p75": at(0.75), "p95": at(0.95), "p99": at(0.99)}
}
