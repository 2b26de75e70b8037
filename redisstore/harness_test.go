package redisstore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// The fleet harness: N replica processes (this test binary run again, as
// TestFleetHarnessReplica) against one managementtest server and a real
// redis-server (or a Cluster), under a steady load, through phases in which
// Redis hangs, is squatted, holds dead leases or is killed. It prints, per
// phase, the failed calls and the latency of the calls started in it.
// scripts/bench-fleet.sh harness runs it; it is not part of go test's
// ordinary run (it takes a minute or two and N processes):
//
//	MANAGEMENT_FLEET_HARNESS=single go test -run '^TestFleetHarness$' -v -timeout 0 .
//	MANAGEMENT_FLEET_HARNESS=cluster ...
//
// The workload, per replica: 40 Users.Get and 75 checks a second (1 200
// checks a second for 16 replicas), started on ticks whatever the latency
// (open loop), each with a 2 s deadline; the checks pick one of 60 End User
// tokens at random, 50 issued and 10 never issued (refused as invalid,
// which is their expected answer). Management tokens live 3 s, CacheTTL is
// 4 s, and everything else is the SDK's default, SharedStoreTimeout
// included, with go-redis clients as the package's doc sets them up
// (ContextTimeoutEnabled). The replicas start 50 ms apart and run 8 s
// before the first phase (warm-up); each disruption is followed by 5 s of
// recovery, reported apart. A call belongs to the phase it started in.
// Settings (environment):
//
//	FLEET_REPLICAS=16   replica processes
//	FLEET_PHASE=8s      the length of each disruption (hang, squat, dead lease, kill)
//	FLEET_SST=          Config.SharedStoreTimeout (default: the SDK's)
//	FLEET_CTX_TIMEOUT=1 go-redis ContextTimeoutEnabled (0: off)
//	FLEET_PHASES=hang,squat,dead,kill  the single server's phases, in order

// harnessSpec is what a replica process is told, as JSON in its
// environment (harnessSpecEnv).
type harnessSpec struct {
	BaseURL      string
	ClientID     string
	ClientSecret string
	Addrs        []string
	Cluster      bool
	Tokens       []string // End User tokens: the first Valid are issued
	Valid        int
	SST          time.Duration // 0: the SDK's default
	CtxTimeout   bool
	GetsPerSec   int
	ChecksPerSec int
	Deadline     time.Duration
	CacheTTL     time.Duration
	Out          string // the file the replica writes its records to
}

const harnessSpecEnv = "MANAGEMENT_FLEET_REPLICA"

// A record is one line of a replica's file: what ("get", "check" or "op",
// a store operation as the Store saw it), when it started (Unix ns), how
// long it took (ns), and whether it failed (1).
type record struct {
	what   string
	start  int64
	took   time.Duration
	failed bool
}

// recorder writes records, from any goroutine.
type recorder struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (r *recorder) add(what string, start time.Time, err error) {
	took := time.Since(start)
	failed := 0
	if err != nil {
		failed = 1
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, "%s %d %d %d\n", what, start.UnixNano(), took, failed)
}

// timedStore records every operation of the Store it wraps.
type timedStore struct {
	*Store
	rec *recorder
}

func (s timedStore) Get(ctx context.Context, key string) ([]byte, error) {
	start := time.Now()
	v, err := s.Store.Get(ctx, key)
	s.rec.add("op", start, err)
	return v, err
}

func (s timedStore) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	start := time.Now()
	err := s.Store.Set(ctx, key, value, ttl)
	s.rec.add("op", start, err)
	return err
}

func (s timedStore) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := s.Store.Delete(ctx, key)
	s.rec.add("op", start, err)
	return err
}

func (s timedStore) TryLock(ctx context.Context, key string, ttl time.Duration) (func(context.Context) error, bool, error) {
	start := time.Now()
	unlock, ok, err := s.Store.TryLock(ctx, key, ttl)
	s.rec.add("op", start, err)
	return unlock, ok, err
}

// TestFleetHarnessReplica is one replica of TestFleetHarness: it runs the
// workload until its standard input closes, then waits for its calls and
// exits.
func TestFleetHarnessReplica(t *testing.T) {
	raw := os.Getenv(harnessSpecEnv)
	if raw == "" {
		t.Skip("a replica of TestFleetHarness, run by it")
	}
	var spec harnessSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(spec.Out)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{w: bufio.NewWriterSize(out, 1<<16)}
	var rdb redis.UniversalClient
	if spec.Cluster {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: spec.Addrs, ContextTimeoutEnabled: spec.CtxTimeout})
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: spec.Addrs[0], ContextTimeoutEnabled: spec.CtxTimeout})
	}
	store := timedStore{New(rdb, WithLogger(quietLogger())), rec}
	client, err := management.NewClient(management.Config{
		BaseURL: spec.BaseURL, ClientID: spec.ClientID, ClientSecret: spec.ClientSecret,
		HTTPClient:         &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		SharedStore:        store,
		SharedStoreTimeout: spec.SST,
		Logger:             quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := &management.Authenticator{Client: client, SharedStore: store, CacheTTL: spec.CacheTTL}

	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	var calls sync.WaitGroup
	every := func(perSec int, call func(context.Context) error, what string) {
		tick := time.NewTicker(time.Second / time.Duration(perSec))
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			calls.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), spec.Deadline)
				defer cancel()
				start := time.Now()
				rec.add(what, start, call(ctx))
			})
		}
	}
	var loops sync.WaitGroup
	loops.Go(func() {
		every(spec.GetsPerSec, func(ctx context.Context) error {
			_, err := client.Users.Get(ctx, "u-1")
			return err
		}, "get")
	})
	loops.Go(func() {
		every(spec.ChecksPerSec, func(ctx context.Context) error {
			i := rand.N(len(spec.Tokens))
			r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
			r.Header.Set("Authorization", "Bearer "+spec.Tokens[i])
			u, err := auth.Check(r)
			switch {
			case i >= spec.Valid && errors.Is(err, management.ErrInvalidToken):
				return nil // the expected answer for a token never issued
			case i >= spec.Valid:
				return fmt.Errorf("a token never issued: %v, %v", u, err)
			}
			return err
		}, "check")
	})
	loops.Wait()
	calls.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err := errors.Join(rec.w.Flush(), out.Close()); err != nil {
		t.Fatal(err)
	}
}

// quietLogger discards: the harness counts outcomes, it does not read logs.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// phase is a stretch of the run: the calls started in it are its own.
type phase struct {
	name           string
	from, to       time.Time
	tokens, authns int // the service's token requests and authenticate calls in it
}

// harness is the running fleet of replica processes.
type harness struct {
	t     *testing.T
	srv   *managementtest.Server
	procs []*exec.Cmd
	stdin []io.WriteCloser
	outs  []string
	phase []phase
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// startHarness starts n replicas of spec.
func startHarness(t *testing.T, srv *managementtest.Server, n int, spec harnessSpec) *harness {
	h := &harness{t: t, srv: srv}
	dir := t.TempDir()
	for i := range n {
		spec.Out = fmt.Sprintf("%s/replica-%d", dir, i)
		raw, _ := json.Marshal(spec)
		cmd := exec.Command(os.Args[0], "-test.run=^TestFleetHarnessReplica$", "-test.timeout=0")
		cmd.Env = append(os.Environ(), harnessSpecEnv+"="+string(raw))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		h.procs, h.stdin, h.outs = append(h.procs, cmd), append(h.stdin, in), append(h.outs, spec.Out)
		time.Sleep(50 * time.Millisecond) // pacing the start-ups, which would otherwise take the CPU all at once
	}
	t.Cleanup(func() {
		for _, p := range h.procs {
			if p.ProcessState == nil {
				_ = p.Process.Kill()
				_ = p.Wait()
			}
		}
	})
	return h
}

// run runs one phase: start starts its disruption (nil: none), which
// lasts d (at least until start returns), and end ends it (nil: nothing to
// end).
func (h *harness) run(name string, d time.Duration, start, end func()) {
	p := phase{name: name, from: time.Now()}
	tokens, authns := h.srv.Requests(managementtest.RouteToken), h.srv.Requests(managementtest.RouteAuthenticate)
	until := p.from.Add(d)
	if start != nil {
		start()
	}
	time.Sleep(time.Until(until)) // the phase's length: the load runs meanwhile
	if end != nil {
		end()
	}
	p.to = time.Now()
	p.tokens = h.srv.Requests(managementtest.RouteToken) - tokens
	p.authns = h.srv.Requests(managementtest.RouteAuthenticate) - authns
	h.phase = append(h.phase, p)
	h.t.Logf("%s: %v", name, p.to.Sub(p.from).Round(time.Millisecond))
}

// stop ends the load, waits for the replicas and returns each one's records.
func (h *harness) stop() [][]record {
	for _, in := range h.stdin {
		_ = in.Close()
	}
	for _, p := range h.procs {
		if err := p.Wait(); err != nil {
			h.t.Errorf("replica: %v", err)
		}
	}
	var all [][]record
	for _, name := range h.outs {
		data, err := os.ReadFile(name)
		if err != nil {
			h.t.Fatal(err)
		}
		var recs []record
		for line := range strings.Lines(string(data)) {
			f := strings.Fields(line)
			if len(f) != 4 {
				continue
			}
			start, _ := strconv.ParseInt(f[1], 10, 64)
			took, _ := strconv.ParseInt(f[2], 10, 64)
			recs = append(recs, record{what: f[0], start: start, took: time.Duration(took), failed: f[3] == "1"})
		}
		all = append(all, recs)
	}
	return all
}

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p/100))]
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// summary is the table of the run: per phase, the calls started in it.
func (h *harness) summary(replicas [][]record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| phase | calls | failed | p50 ms | p99 ms | max ms | Users.Get p99 | checks p99 | calls > 600 ms (most on one replica) | token requests | authenticate calls | store ops (failed) | store op p50 / p99.9 ms |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range h.phase {
		var all, gets, checks, ops []time.Duration
		failed, opsFailed, over, mostOver := 0, 0, 0, 0
		for _, recs := range replicas {
			mine := 0
			for _, r := range recs {
				at := time.Unix(0, r.start)
				if at.Before(p.from) || !at.Before(p.to) {
					continue
				}
				switch r.what {
				case "op":
					ops = append(ops, r.took)
					if r.failed {
						opsFailed++
					}
					continue
				case "get":
					gets = append(gets, r.took)
				case "check":
					checks = append(checks, r.took)
				}
				all = append(all, r.took)
				if r.failed {
					failed++
				}
				if r.took > 600*time.Millisecond {
					mine++
				}
			}
			over += mine
			mostOver = max(mostOver, mine)
		}
		for _, s := range [][]time.Duration{all, gets, checks, ops} {
			slices.Sort(s)
		}
		h.t.Logf("%s: slowest calls %s", p.name, slowest(replicas, p, 8))
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s | %d (%d) | %d | %d | %d (%d) | %s / %s |\n",
			p.name, len(all), failed, ms(percentile(all, 50)), ms(percentile(all, 99)), ms(percentile(all, 100)),
			ms(percentile(gets, 99)), ms(percentile(checks, 99)), over, mostOver, p.tokens, p.authns,
			len(ops), opsFailed, ms(percentile(ops, 50)), ms(percentile(ops, 99.9)))
	}
	return b.String()
}

// slowest describes the n slowest calls started in p: how long each took,
// what it was, which replica made it and when, from the start of p.
func slowest(replicas [][]record, p phase, n int) string {
	type call struct {
		record
		replica int
	}
	var calls []call
	for i, recs := range replicas {
		for _, r := range recs {
			if at := time.Unix(0, r.start); r.what != "op" && !at.Before(p.from) && at.Before(p.to) {
				calls = append(calls, call{r, i})
			}
		}
	}
	slices.SortFunc(calls, func(a, b call) int { return int(b.took - a.took) })
	var parts []string
	for _, c := range calls[:min(n, len(calls))] {
		parts = append(parts, fmt.Sprintf("%s %vms #%d@+%.2fs", c.what, c.took.Milliseconds(), c.replica, time.Unix(0, c.start).Sub(p.from).Seconds()))
	}
	return strings.Join(parts, ", ")
}

// TestFleetHarness runs the fleet through its phases and prints the table
// (see the comment at the top of this file).
func TestFleetHarness(t *testing.T) {
	mode := os.Getenv("MANAGEMENT_FLEET_HARNESS")
	if mode == "" {
		t.Skip("the fleet harness: run by scripts/bench-fleet.sh harness (MANAGEMENT_FLEET_HARNESS=single or cluster)")
	}
	n, err := strconv.Atoi(envOr("FLEET_REPLICAS", "16"))
	if err != nil {
		t.Fatal(err)
	}
	length, err := time.ParseDuration(envOr("FLEET_PHASE", "8s"))
	if err != nil {
		t.Fatal(err)
	}
	var sst time.Duration
	if v := os.Getenv("FLEET_SST"); v != "" {
		if sst, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	srv := managementtest.NewServer(managementtest.WithTokenLifetime(3 * time.Second))
	t.Cleanup(srv.Close)
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	spec := harnessSpec{
		BaseURL: srv.URL, ClientID: srv.ClientID, ClientSecret: srv.ClientSecret,
		Valid: 50, SST: sst, CtxTimeout: envOr("FLEET_CTX_TIMEOUT", "1") == "1",
		GetsPerSec: 40, ChecksPerSec: 1200 / 16, Deadline: 2 * time.Second, CacheTTL: 4 * time.Second,
	}
	for range spec.Valid {
		spec.Tokens = append(spec.Tokens, srv.IssueEndUserToken("u-1"))
	}
	for i := range 10 {
		spec.Tokens = append(spec.Tokens, fmt.Sprintf("never-issued-%d-%d", i, rand.Int64()))
	}
	uptime, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%d replicas, mode %s, SharedStoreTimeout %v (0: default), ContextTimeoutEnabled %v, load average before: %s",
		n, mode, sst, spec.CtxTimeout, strings.TrimSpace(string(uptime)))

	var h *harness
	switch mode {
	case "single":
		s := startRedis(t)
		spec.Addrs = []string{s.Addr}
		h = startHarness(t, srv, n, spec)
		runSingle(t, h, s, length)
	case "cluster":
		c := startCluster(t)
		spec.Addrs, spec.Cluster = c.Addrs(), true
		h = startHarness(t, srv, n, spec)
		runCluster(t, h, c, length)
	default:
		t.Fatalf("MANAGEMENT_FLEET_HARNESS=%q: want single or cluster", mode)
	}
	table := h.summary(h.stop())
	uptime, _ = os.ReadFile("/proc/loadavg")
	t.Logf("load average after: %s", strings.TrimSpace(string(uptime)))
	fmt.Println(table)
}

// runSingle runs the phases of one redis-server.
func runSingle(t *testing.T, h *harness, s *redisServer, length time.Duration) {
	admin := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer func() { _ = admin.Close() }()
	ctx := context.Background()
	const recover = 5 * time.Second
	h.run("warm-up", 8*time.Second, nil, nil)
	h.run("calm", length, nil, nil)
	for _, name := range strings.Split(envOr("FLEET_PHASES", "hang,squat,dead,kill"), ",") {
		switch name {
		case "hang":
			h.run("hang (SIGSTOP)", length, func() { s.Pause(t) }, func() { s.Resume(t) })
		case "squat":
			stop := make(chan struct{})
			var squatter sync.WaitGroup
			h.run("squat (every lease held)", length, func() {
				squatter.Go(func() { squat(ctx, admin, stop, time.Minute) })
			}, func() {
				close(stop)
				squatter.Wait()
				unsquat(ctx, admin)
			})
		case "dead":
			// Replicas killed mid-refresh, one after the other: every 2 s,
			// values gone and their leases left for the SDK's lease times
			// (the token's 10 s, a verdict's 1 s).
			stop := make(chan struct{})
			var killer sync.WaitGroup
			h.run("dead leases", length, func() {
				killer.Go(func() { leaveDeadLeases(ctx, admin, stop) })
			}, func() {
				close(stop)
				killer.Wait()
			})
		case "kill":
			h.run("kill (SIGKILL, restarted empty after the phase)", length, s.Stop, func() { restartRedis(t, s) })
		default:
			t.Fatalf("FLEET_PHASES: unknown phase %q", name)
		}
		h.run("after "+name, recover, nil, nil)
	}
}

// runCluster kills the master that holds the fleet's token, waits for the
// promotion of its replica, and lets the fleet run on.
func runCluster(t *testing.T, h *harness, c *cluster, length time.Duration) {
	h.run("warm-up", 8*time.Second, nil, nil)
	h.run("calm", length, nil, nil)
	tokenKeys := c.keys(t, DefaultPrefix+"*:token")
	if len(tokenKeys) != 1 {
		t.Fatalf("token keys in the cluster: %q; want one", tokenKeys)
	}
	victim := c.masterOf(t, tokenKeys[0])
	var witness string // a node that stays up, asked for the cluster's state
	for _, n := range c.nodes {
		if n != victim {
			witness = n.Addr
			break
		}
	}
	var promoted time.Duration
	h.run("master SIGKILLed, until promoted and 5 s more", 0, func() {
		start := time.Now()
		victim.Stop()
		promoted = waitPromoted(t, witness, victim.Addr).Sub(start)
		time.Sleep(5 * time.Second) // the fleet's time to settle after the promotion
	}, nil)
	t.Logf("promoted %v after the kill", promoted.Round(10*time.Millisecond))
	h.run("after", length, nil, nil)
}

// waitPromoted waits until the node at witness sees three masters serving
// every slot, none of them dead, and returns when. It asks one node, ten
// times a second (cluster.waitHealthy asks every node fifty times a second,
// which would take the CPU from under the fleet being measured).
func waitPromoted(t *testing.T, witness, dead string) time.Time {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		nodes, err := view(ctx, witness)
		cancel()
		masters, slots := 0, 0
		for _, n := range nodes {
			if n.master && n.slots > 0 && !n.failed && n.addr != dead {
				masters++
				slots += n.slots
			}
		}
		if err == nil && masters == 3 && slots == 16384 {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no promotion seen by %s within 30 s: %v", witness, err)
		}
		time.Sleep(100 * time.Millisecond) // polling the cluster's state
	}
}

// valueKeys returns the keys of the SDK's values (not leases, not epochs).
func valueKeys(ctx context.Context, rdb *redis.Client) []string {
	var keys []string
	iter := rdb.Scan(ctx, 0, DefaultPrefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if !strings.HasSuffix(k, ":lease") && !strings.HasSuffix(k, ":epoch") {
			keys = append(keys, k)
		}
	}
	return keys
}

// squat holds the lease of every value it finds, as whoever can write
// Redis may, until stop is closed.
func squat(ctx context.Context, rdb *redis.Client, stop chan struct{}, ttl time.Duration) {
	for {
		for _, k := range valueKeys(ctx, rdb) {
			rdb.SetNX(ctx, k+":lease", "squatter", ttl)
		}
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond): // the squatter's pace
		}
	}
}

// leaveDeadLeases, every 2 s until stop is closed, deletes every value and
// leaves its lease as a holder killed while producing it would.
func leaveDeadLeases(ctx context.Context, rdb *redis.Client, stop chan struct{}) {
	for {
		for _, k := range valueKeys(ctx, rdb) {
			ttl := time.Second // the SDK's verdict lease
			if strings.HasSuffix(k, ":token") {
				ttl = 10 * time.Second // its token lease
			}
			rdb.Del(ctx, k)
			rdb.SetNX(ctx, k+":lease", "dead", ttl)
		}
		select {
		case <-stop:
			return
		case <-time.After(2 * time.Second): // the pace of the deaths
		}
	}
}

// unsquat releases the squatter's leases.
func unsquat(ctx context.Context, rdb *redis.Client) {
	iter := rdb.Scan(ctx, 0, DefaultPrefix+"*:lease", 1000).Iterator()
	for iter.Next(ctx) {
		if v, _ := rdb.Get(ctx, iter.Val()).Result(); v == "squatter" {
			rdb.Del(ctx, iter.Val())
		}
	}
}

// restartRedis starts s again, empty, on the same address.
func restartRedis(t *testing.T, s *redisServer) {
	_, port, _ := strings.Cut(s.Addr, "127.0.0.1:")
	args := []string{"--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", t.TempDir()}
	s.start(t, exec.Command(s.cmd.Path, args...))
	if err := s.waitReady(); err != nil {
		t.Errorf("restarting redis-server: %v", err)
	}
}
