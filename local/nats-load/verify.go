package main

// The lost-message verifier for NATS JetStream (-verify), the counterpart of local/lost-message-verifier.ts for
// RabbitMQ: beside the load client, in a repetition with a fault, it publishes sequence-numbered messages to a stream
// of its own (the workload's storage, replicas, retention and limits) and waits for each one's JetStream
// acknowledgement, and one pull consumer with explicit acks reads them back, so that what the fault cost is counted
// message by message: acknowledged (confirmed) but never consumed = lost, consumed twice = duplicated. This is how
// the 2025 Jepsen analysis of NATS 2.12.1 counted the acknowledged writes it found lost (https://jepsen.io/analyses).
//
// nats.go reconnects by itself (MaxReconnects -1); a publish whose acknowledgement does not come within
// -ack-timeout (the stream had no leader, the connection dropped) counts as unconfirmed and is not published again
// (a producer that republishes turns a loss into a duplicate).
//
// Signals from local/process-verifier.ts: SIGUSR1 marks the fault (the time, and the publishes then unacknowledged),
// SIGUSR2 marks the heal, SIGTERM finishes: publishing stops, the last acknowledgements are waited for (5 s at
// most), the consumer drains until every confirmed message arrived or none arrived for 3 s (30 s at most), the
// stream is deleted, and one "counts" line is printed. Lines: {"type":"ready"} once the stream, the consumer and
// the publisher are ready, {"type":"counts",...} (core/failover/failover.ts VerifierCounts), {"type":"error",...}.
//
// Cloud mode, -verify-seconds N: on a cloud load generator (lambdas/start-repetition/nats-script.ts) nothing can
// signal the verifier, since the fault is applied by another process (the workflow's fault step) at a wall-clock
// time. The verifier then finishes by itself N seconds after its start, as on SIGTERM. So that the fault can be
// placed on its timeline afterwards (core/failover/cloud-verifier.ts, from the fault step's applied and healed
// times), the counts line always carries startedAtMs (the wall clock at the verifier's start) and
// unconfirmedPerSecond (the publishes unacknowledged at each whole second after it, as many as receivedPerSecond;
// a second the publisher missed, a publish stalled, takes the count when it came back).

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pullExpiry of the consumers' pull requests. nats.go's default (jetstream/pull.go DefaultExpires, 30 s, with idle
// heartbeats at half of it) leaves a pull request that went to a consumer leader which then died unanswered until
// two heartbeats are missed: the consumer would stop receiving for up to 30 s after each fault, the client's delay
// and not the broker's. 5 s (heartbeats every 2.5 s) puts it on a par with the RabbitMQ verifier's 5 s heartbeat.
const pullExpiry = 5 * time.Second

type verifier struct {
	s          settings
	start      time.Time
	mu         sync.Mutex
	confirmed  map[uint64]bool
	consumed   map[uint64]bool
	buckets    []int64
	measuring  bool
	duplicates int64
	published  atomic.Uint64
	inFlight   atomic.Int64
	reconnects atomic.Int64
	lastSeenNs atomic.Int64
	faultAt    *float64
	faultOpen  int64
	healAt     *float64

	// unconfirmed holds the publishes in flight at whole second i after start: the publisher alone appends to it,
	// and finish reads it once the publisher has returned.
	unconfirmed []int64
}

func (v *verifier) seconds() float64 { return time.Since(v.start).Seconds() }

// sampleUnconfirmed records the publishes in flight for every whole second before `seconds` not sampled yet.
func (v *verifier) sampleUnconfirmed(seconds int) {
	for len(v.unconfirmed) < seconds {
		v.unconfirmed = append(v.unconfirmed, v.inFlight.Load())
	}
}

func (v *verifier) connect(name string) (*nats.Conn, error) {
	return connect(v.s, name, nats.ReconnectHandler(func(*nats.Conn) { v.reconnects.Add(1) }))
}

func (v *verifier) onMessage(msg jetstream.Msg) {
	seq, err := strconv.ParseUint(string(msg.Data()), 10, 64)
	if err == nil {
		v.mu.Lock()
		if v.consumed[seq] {
			v.duplicates++
		} else {
			v.consumed[seq] = true
		}
		if v.measuring {
			second := int(v.seconds())
			for len(v.buckets) <= second {
				v.buckets = append(v.buckets, 0)
			}
			v.buckets[second]++
		}
		v.mu.Unlock()
		v.lastSeenNs.Store(time.Now().UnixNano())
	}
	_ = msg.Ack()
}

// publish sends one message per 1/rate s until stop closes; a waiter per message records its acknowledgement.
func (v *verifier) publish(js jetstream.JetStream, rate int, stop chan struct{}, acks *sync.WaitGroup) {
	interval := time.Second / time.Duration(rate)
	for sent := uint64(0); ; sent++ {
		if wait := time.Duration(sent)*interval - time.Since(v.start); wait > 0 {
			select {
			case <-stop:
				return
			case <-time.After(wait):
			}
		}
		select {
		case <-stop:
			return
		default:
		}
		v.sampleUnconfirmed(int(v.seconds()) + 1)
		seq := sent
		future, err := js.PublishAsync(v.s.Subject, []byte(strconv.FormatUint(seq, 10)),
			jetstream.WithStallWait(time.Second))
		v.published.Add(1)
		if err != nil {
			continue
		}
		v.inFlight.Add(1)
		acks.Add(1)
		go func() {
			defer acks.Done()
			defer v.inFlight.Add(-1)
			select {
			case <-future.Ok():
				v.mu.Lock()
				v.confirmed[seq] = true
				v.mu.Unlock()
			case <-future.Err():
			}
		}()
	}
}

// runVerifier runs until SIGTERM (or SIGINT), or, when finishAfter > 0 (cloud mode), until that many seconds after
// its start.
func runVerifier(s settings, rate int, ackTimeout time.Duration, finishAfter int) {
	streamCfg, err := streamConfig(s)
	if err != nil {
		fail("%v", err)
	}
	v := &verifier{s: s, confirmed: map[uint64]bool{}, consumed: map[uint64]bool{}, buckets: []int64{},
		unconfirmed: []int64{}, measuring: true}
	admin, err := v.connect("rmqbench-verifier-admin")
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
	stream, err := adminJs.CreateStream(ctx, streamCfg)
	if err != nil {
		cancel()
		fail("create verifier stream %s (replicas %d, %s storage): %v", s.Stream, s.Replicas, s.Storage, err)
	}
	consumerCfg := jetstream.ConsumerConfig{Durable: "rmqbench-verifier", AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy, AckWait: 5 * time.Second}
	if _, err := stream.CreateOrUpdateConsumer(ctx, consumerCfg); err != nil {
		cancel()
		deleteStream(adminJs, s)
		fail("create the verifier's consumer on %s: %v", s.Stream, err)
	}
	cancel()
	subConn, err := v.connect("rmqbench-verifier-consumer")
	if err != nil {
		deleteStream(adminJs, s)
		fail("consumer: connect: %v", err)
	}
	subJs, _ := jetstream.New(subConn)
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	consumer, err := subJs.Consumer(ctx, s.Stream, "rmqbench-verifier")
	cancel()
	if err != nil {
		deleteStream(adminJs, s)
		fail("consumer: %v", err)
	}
	// The clock of the counts starts here, before the first delivery can arrive, and "ready" follows within ms.
	v.start = time.Now()
	consume, err := consumer.Consume(v.onMessage, jetstream.PullMaxMessages(200), jetstream.PullExpiry(pullExpiry),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			fmt.Fprintf(os.Stderr, "%s consume: %v\n", time.Now().Format(time.TimeOnly), err)
		}))
	if err != nil {
		deleteStream(adminJs, s)
		fail("consume: %v", err)
	}
	pubConn, err := v.connect("rmqbench-verifier-publisher")
	if err != nil {
		deleteStream(adminJs, s)
		fail("publisher: connect: %v", err)
	}
	pubJs, err := jetstream.New(pubConn, jetstream.WithPublishAsyncMaxPending(s.Window),
		jetstream.WithPublishAsyncTimeout(ackTimeout))
	if err != nil {
		fail("jetstream: %v", err)
	}

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	emit(map[string]any{"type": "ready", "stream": s.Stream})
	stop := make(chan struct{})
	var acks sync.WaitGroup
	publishing := make(chan struct{})
	go func() {
		defer close(publishing)
		v.publish(pubJs, rate, stop, &acks)
	}()
	var finishTimer <-chan time.Time // nil, never ready, unless in cloud mode
	if finishAfter > 0 {
		finishTimer = time.After(time.Until(v.start.Add(time.Duration(finishAfter) * time.Second)))
	}
	var measured int
	for finished := false; !finished; {
		select {
		case <-finishTimer:
			measured = finishAfter
			finished = true
		case received := <-signals:
			switch received {
			case syscall.SIGUSR1:
				at := round3(v.seconds())
				v.faultAt, v.faultOpen = &at, v.inFlight.Load()
			case syscall.SIGUSR2:
				at := round3(v.seconds())
				v.healAt = &at
			default:
				measured = int(v.seconds())
				finished = true
			}
		}
	}
	close(stop)
	<-publishing
	v.finish(measured, &acks)
	consume.Stop()
	undelivered := v.finalRead(stream)
	subConn.Close()
	pubConn.Close()
	deleteStream(adminJs, s)
	v.printCounts(undelivered)
}

// finalRead reads the whole stream once more, as Jepsen's final reads do, when the consumer did not get every
// confirmed message: those still in the stream are not lost, only undelivered (the consumer never got them, e.g. it
// stopped receiving after the fault). Returns how many confirmed, unconsumed messages the stream still holds;
// with retention "limits" it holds every message it kept, with "workqueue" and "interest" those not yet acknowledged.
func (v *verifier) finalRead(stream jetstream.Stream) map[uint64]bool {
	found := map[uint64]bool{}
	if v.allConsumed() {
		return found
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reader, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		fmt.Fprintf(os.Stderr, "final read: %v\n", err)
		return found
	}
	for ctx.Err() == nil {
		batch, err := reader.Fetch(500, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			fmt.Fprintf(os.Stderr, "final read: %v\n", err)
			return found
		}
		read := 0
		for msg := range batch.Messages() {
			read++
			if seq, err := strconv.ParseUint(string(msg.Data()), 10, 64); err == nil {
				found[seq] = true
			}
		}
		if read == 0 {
			return found
		}
	}
	return found
}

// finish cuts the per-second counts at the last whole second, waits for the last acknowledgements, then drains.
func (v *verifier) finish(measured int, acks *sync.WaitGroup) {
	v.sampleUnconfirmed(measured)
	v.unconfirmed = v.unconfirmed[:measured]
	v.mu.Lock()
	v.measuring = false
	for len(v.buckets) < measured {
		v.buckets = append(v.buckets, 0)
	}
	v.buckets = v.buckets[:measured]
	v.mu.Unlock()
	settled := make(chan struct{})
	go func() { acks.Wait(); close(settled) }()
	select {
	case <-settled:
	case <-time.After(5 * time.Second):
	}
	deadline := time.Now().Add(30 * time.Second)
	v.lastSeenNs.Store(max(v.lastSeenNs.Load(), time.Now().UnixNano()))
	for time.Now().Before(deadline) {
		if v.allConsumed() || time.Since(time.Unix(0, v.lastSeenNs.Load())) > 3*time.Second {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (v *verifier) allConsumed() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for seq := range v.confirmed {
		if !v.consumed[seq] {
			return false
		}
	}
	return true
}

func (v *verifier) printCounts(inStream map[uint64]bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	lost, undelivered := 0, 0
	for seq := range v.confirmed {
		switch {
		case v.consumed[seq]:
		case inStream[seq]:
			undelivered++
		default:
			lost++
		}
	}
	counts := map[string]any{
		"type":                 "counts",
		"published":            v.published.Load(),
		"confirmed":            len(v.confirmed),
		"consumed":             len(v.consumed),
		"lostMessages":         lost,
		"duplicatedMessages":   v.duplicates,
		"undeliveredMessages":  undelivered,
		"reconnects":           v.reconnects.Load(),
		"receivedPerSecond":    v.buckets,
		"startedAtMs":          v.start.UnixMilli(),
		"unconfirmedPerSecond": v.unconfirmed,
	}
	if v.faultAt != nil {
		counts["faultAtSeconds"], counts["unconfirmedAtFault"] = *v.faultAt, v.faultOpen
	}
	if v.healAt != nil {
		counts["healAtSeconds"] = *v.healAt
	}
	emit(counts)
}
