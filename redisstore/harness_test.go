package redisstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
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
// Redis hangs, is squatted, holds dead leases or is killed, or in which the
// service's authenticate endpoint hangs (mode auth). It prints, per phase,
// the failed calls and the latency of the calls started in it, and what the
// fleet shares.
// scripts/bench-fleet.sh harness runs it; it is not part of go test's
// ordinary run (it takes a minute or two and N processes):
//
//	MANAGEMENT_FLEET_HARNESS=single go test -run '^TestFleetHarness$' -v -timeout 0 .
//	MANAGEMENT_FLEET_HARNESS=cluster ...
//	MANAGEMENT_FLEET_HARNESS=auth ...
//
// The workload, the fleet's in all, spread over its replicas: 640 Users.Get
// and 1 200 checks a second (40 and 75 a replica for 16 replicas, 20 and 37
// for 32: more replicas serve the same traffic), started on ticks whatever
// the latency (open loop), each with a 2 s deadline; the checks pick one of 60 End User
// tokens at random, 50 issued and 10 never issued (refused as invalid,
// which is their expected answer). Management tokens live 3 s, CacheTTL is
// 4 s, and everything else is the SDK's default, SharedStoreTimeout
// included, with go-redis clients as the package's doc sets them up
// (ContextTimeoutEnabled). The replicas start 50 ms apart and run 8 s
// before the first phase (warm-up); each disruption is followed by 5 s of
// recovery, reported apart. A call belongs to the phase it started in.
//
// Mode auth is the service's outage instead of the store's: CacheTTL 2 s,
// StaleIfError 1 min, checks with a 6 s deadline (longer than the
// Authenticator's Timeout, 5 s, as a caller of a check should allow);
// after the calm phase, 5 of the issued tokens are revoked at the service
// and forgotten (Authenticator.Forget, on an Authenticator of the harness's
// own sharing the Redis), and the authenticate endpoint hangs for
// FLEET_AUTH_OUTAGE (every call waits until the caller gives up), then
// answers again. Its table counts the confirmed End Users refused (a check
// of an issued token, not revoked, that failed), the stale passes, the
// p99 of the checks of never-issued tokens started while their replica's
// authenticate breaker was open, the revoked tokens let through more than
// 5 s after the Forget (the in-process cache's documented slack; those
// within it are counted apart), and the most authenticate calls one
// replica had running at once while its breaker was open.
//
// Every mode also prints what the fleet shares, per phase: the most token
// requests in one refresh interval (2.7 s: the 3 s lifetime less its
// tenth), and the authenticate calls per End User token per CacheTTL
// (windows of CacheTTL from the phase's start: the mean over the tokens
// and windows, and the most), with the calls that failed.
//
// Settings (environment):
//
//	FLEET_REPLICAS=16   replica processes
//	FLEET_PHASE=8s      the length of each disruption (hang, squat, dead lease, kill), and of the calm phase
//	FLEET_SST=          Config.SharedStoreTimeout (default: the SDK's)
//	FLEET_CTX_TIMEOUT=1 go-redis ContextTimeoutEnabled (0: off)
//	FLEET_PHASES=hang,squat,dead,kill  the single server's phases, in order ("none": calm only)
//	FLEET_AUTH_OUTAGE=20s  how long the authenticate endpoint hangs (mode auth)
//	FLEET_LOG=1         each replica logs (Info) beside its records, in a directory kept after the run
//	FLEET_LOG=1         each replica logs (Info) beside its records, in a directory kept after the run
//
// scripts/bench-fleet.sh harness runs it, beside LOAD CPU-burning loops
// (LOAD=4 on a 2-core host: a busy node), bounded in time.

// harnessSpec is what a replica process is told, as JSON in its
// environment (harnessSpecEnv).
type harnessSpec struct {
	BaseURL       string
	ClientID      string
	ClientSecret  string
	Addrs         []string
	Cluster       bool
	Tokens        []string // End User tokens: the first Valid are issued
	Valid         int
	SST           time.Duration // 0: the SDK's default
	CtxTimeout    bool
	GetsPerSec    int
	ChecksPerSec  int
	Deadline      time.Duration // of a Users.Get
	CheckDeadline time.Duration // of a check
	CacheTTL      time.Duration
	StaleIfError  time.Duration
	Out           string // the file the replica writes its records to
	Log           bool   // the replica logs (Info) to Out + ".log" (FLEET_LOG=1)
}

const harnessSpecEnv = "MANAGEMENT_FLEET_REPLICA"

// A record is one line of a replica's file: what ("get", "check", "op", a
// store operation as the Store saw it, "authn", an authenticate call as
// the replica's transport saw it, or "breaker", a breaker opening or
// closing), when it started (Unix ns), how long it took (ns), and whether
// it failed (1); a check adds the index of its token and its outcome
// (outcomeFresh, ...), a breaker its name and whether it opened.
type record struct {
	what    string
	start   int64
	took    time.Duration
	failed  bool
	token   int    // a check's: its index in harnessSpec.Tokens
	outcome string // a check's outcome; a breaker's name
	open    bool   // a breaker's change
}

// The outcomes of a check.
const (
	outcomeFresh   = "fresh"   // let through, fresh
	outcomeStale   = "stale"   // let through under StaleIfError
	outcomeInvalid = "invalid" // refused as invalid
	outcomeDown    = "down"    // refused: ErrAuthenticationUnavailable
	outcomeOther   = "other"   // refused otherwise (the check's deadline, ...)
)

// recorder writes records, from any goroutine.
type recorder struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (r *recorder) add(what string, start time.Time, err error) {
	r.write(record{what: what, start: start.UnixNano(), took: time.Since(start), failed: err != nil, token: -1})
}

func (r *recorder) write(rec record) {
	failed, open := 0, 0
	if rec.failed {
		failed = 1
	}
	if rec.open {
		open = 1
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, "%s %d %d %d %d %s %d\n", rec.what, rec.start, rec.took, failed, rec.token, cmpOr(rec.outcome, "-"), open)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// timedTransport records the authenticate calls of a replica.
type timedTransport struct {
	http.RoundTripper
	rec *recorder
}

func (t timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/authenticate") {
		return t.RoundTripper.RoundTrip(req)
	}
	start := time.Now()
	resp, err := t.RoundTripper.RoundTrip(req)
	if err != nil {
		t.rec.add("authn", start, err)
		return resp, err
	}
	// The call ends when its body is read.
	resp.Body = &timedBody{ReadCloser: resp.Body, done: func() { t.rec.add("authn", start, nil) }}
	return resp, nil
}

type timedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *timedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
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
	logger := quietLogger()
	if spec.Log {
		f, err := os.Create(spec.Out + ".log")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		logger = slog.New(slog.NewTextHandler(f, nil))
	}
	store := timedStore{New(rdb, WithLogger(quietLogger())), rec}
	client, err := management.NewClient(management.Config{
		BaseURL: spec.BaseURL, ClientID: spec.ClientID, ClientSecret: spec.ClientSecret,
		HTTPClient:         &http.Client{Transport: timedTransport{&http.Transport{MaxIdleConnsPerHost: 64}, rec}},
		SharedStore:        store,
		SharedStoreTimeout: spec.SST,
		Logger:             logger,
		Observer: &management.Observer{BreakerChange: func(_ context.Context, b management.BreakerInfo) {
			rec.write(record{what: "breaker", start: time.Now().UnixNano(), token: -1, outcome: string(b.Breaker), open: b.Open})
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := &management.Authenticator{Client: client, SharedStore: store, CacheTTL: spec.CacheTTL, StaleIfError: spec.StaleIfError}

	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	var calls sync.WaitGroup
	every := func(perSec int, deadline time.Duration, call func(context.Context, time.Time)) {
		tick := time.NewTicker(time.Second / time.Duration(perSec))
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			calls.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				call(ctx, time.Now())
			})
		}
	}
	var loops sync.WaitGroup
	loops.Go(func() {
		every(spec.GetsPerSec, spec.Deadline, func(ctx context.Context, start time.Time) {
			_, err := client.Users.Get(ctx, "u-1")
			rec.add("get", start, err)
		})
	})
	loops.Go(func() {
		every(spec.ChecksPerSec, spec.CheckDeadline, func(ctx context.Context, start time.Time) {
			i := rand.N(len(spec.Tokens))
			r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
			r.Header.Set("Authorization", "Bearer "+spec.Tokens[i])
			u, err := auth.Check(r)
			rc := record{what: "check", start: start.UnixNano(), took: time.Since(start), token: i, outcome: outcomeOf(u, err)}
			// A token never issued is expected to be refused as invalid;
			// one issued, to be let through (mode auth revokes some: the
			// parent judges those).
			rc.failed = i >= spec.Valid && rc.outcome != outcomeInvalid || i < spec.Valid && err != nil
			rec.write(rc)
		})
	})
	loops.Wait()
	calls.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err := errors.Join(rec.w.Flush(), out.Close()); err != nil {
		t.Fatal(err)
	}
}

// outcomeOf names how a check ended.
func outcomeOf(u *management.EndUser, err error) string {
	switch {
	case err == nil && u.Stale:
		return outcomeStale
	case err == nil:
		return outcomeFresh
	case errors.Is(err, management.ErrInvalidToken):
		return outcomeInvalid
	case errors.Is(err, management.ErrAuthenticationUnavailable):
		return outcomeDown
	}
	return outcomeOther
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
	calls *serviceLog
	spec  harnessSpec
	procs []*exec.Cmd
	stdin []io.WriteCloser
	outs  []string
	phase []phase
	// revoked holds, in mode auth, the tokens revoked and forgotten, by
	// index, and forgotten when.
	revoked   map[int]bool
	forgotten time.Time
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// serviceLog records the token requests and authenticate calls that reach
// the fake, with the End User credential of each authenticate call.
type serviceLog struct {
	mu    sync.Mutex
	calls []serviceCall
}

type serviceCall struct {
	at         time.Time
	token      bool   // a token request, else an authenticate call
	credential string // an authenticate call's access_token
}

// wrap returns next, recording the calls it serves.
func (l *serviceLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := serviceCall{at: time.Now()}
		switch {
		case strings.HasSuffix(r.URL.Path, "/auth/token"):
			c.token = true
		case strings.HasSuffix(r.URL.Path, "/authenticate"):
			body, _ := io.ReadAll(r.Body)
			var in struct {
				AccessToken string `json:"access_token"`
			}
			_ = json.Unmarshal(body, &in)
			c.credential = in.AccessToken
			r.Body = io.NopCloser(bytes.NewReader(body))
		default:
			next.ServeHTTP(w, r)
			return
		}
		l.mu.Lock()
		l.calls = append(l.calls, c)
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (l *serviceLog) all() []serviceCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// startHarness starts n replicas of spec.
func startHarness(t *testing.T, srv *managementtest.Server, calls *serviceLog, n int, spec harnessSpec) *harness {
	h := &harness{t: t, srv: srv, calls: calls, spec: spec}
	dir := t.TempDir()
	if spec.Log {
		dir, _ = os.MkdirTemp("", "fleet-harness-")
		t.Logf("replicas' records and logs in %s", dir)
	}
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
			if len(f) != 7 {
				continue
			}
			start, _ := strconv.ParseInt(f[1], 10, 64)
			took, _ := strconv.ParseInt(f[2], 10, 64)
			token, _ := strconv.Atoi(f[4])
			recs = append(recs, record{what: f[0], start: start, took: time.Duration(took), failed: f[3] == "1",
				token: token, outcome: f[5], open: f[6] == "1"})
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
	fmt.Fprintf(&b, "| phase | calls | failed | p50 ms | p99 ms | max ms | Users.Get p99 | checks p99 | calls > 600 ms (most on one replica) | token requests | authenticate calls | store ops (failed) | store op p50 / p99 / p99.9 / max ms |\n")
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
				default:
					continue
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
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s | %d (%d) | %d | %d | %d (%d) | %s / %s / %s / %s |\n",
			p.name, len(all), failed, ms(percentile(all, 50)), ms(percentile(all, 99)), ms(percentile(all, 100)),
			ms(percentile(gets, 99)), ms(percentile(checks, 99)), over, mostOver, p.tokens, p.authns,
			len(ops), opsFailed, ms(percentile(ops, 50)), ms(percentile(ops, 99)), ms(percentile(ops, 99.9)), ms(percentile(ops, 100)))
	}
	return b.String()
}

// refreshInterval is how often the fleet's token is refreshed: its 3 s
// lifetime less RefreshMargin's default, a tenth of it.
const refreshInterval = 2700 * time.Millisecond

// sharing is the table of what the fleet shares, per phase: the most token
// requests in one refresh interval, and the authenticate calls per End
// User token per CacheTTL (windows from the phase's start, full ones
// only: the mean over every token and window, and the most), beside the
// calls (Users.Get and checks) that failed.
func (h *harness) sharing(replicas [][]record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| phase | token requests, most in %v | authenticate calls per End User token per CacheTTL (%v), mean / most | calls failed | store breaker openings (replicas) | lease breaker openings (replicas) |\n", refreshInterval, h.spec.CacheTTL)
	fmt.Fprintf(&b, "|---|---|---|---|---|---|\n")
	calls := h.calls.all()
	for _, p := range h.phase {
		windows := int(p.to.Sub(p.from) / h.spec.CacheTTL)
		mostTokens := 0
		perWindow := map[string][]int{} // by credential: the calls in each window
		for _, c := range calls {
			if c.at.Before(p.from) || !c.at.Before(p.to) {
				continue
			}
			if c.token {
				n := 0
				for _, d := range calls {
					if d.token && !d.at.Before(c.at) && d.at.Sub(c.at) < refreshInterval {
						n++
					}
				}
				mostTokens = max(mostTokens, n)
				continue
			}
			if w := int(c.at.Sub(p.from) / h.spec.CacheTTL); w < windows {
				if perWindow[c.credential] == nil {
					perWindow[c.credential] = make([]int, windows)
				}
				perWindow[c.credential][w]++
			}
		}
		total, most := 0, 0
		for _, ws := range perWindow {
			for _, n := range ws {
				total += n
				most = max(most, n)
			}
		}
		mean := 0.0
		if windows > 0 {
			mean = float64(total) / float64(len(h.spec.Tokens)*windows)
		}
		failed := 0
		openings := map[string][2]int{} // by breaker: openings, replicas
		for _, recs := range replicas {
			opened := map[string]bool{}
			for _, r := range recs {
				at := time.Unix(0, r.start)
				if at.Before(p.from) || !at.Before(p.to) {
					continue
				}
				switch {
				case (r.what == "get" || r.what == "check") && r.failed:
					failed++
				case r.what == "breaker" && r.open:
					o := openings[r.outcome]
					o[0]++
					if !opened[r.outcome] {
						o[1]++
					}
					opened[r.outcome] = true
					openings[r.outcome] = o
				}
			}
		}
		store, leases := openings[string(management.BreakerSharedStore)], openings[string(management.BreakerLeaseWaits)]
		fmt.Fprintf(&b, "| %s | %d | %.2f / %d | %d | %d (%d) | %d (%d) |\n", p.name, mostTokens, mean, most, failed, store[0], store[1], leases[0], leases[1])
	}
	return b.String()
}

// slack is how long after a Forget another replica may still let the
// token through from its in-process cache (the SDK's documented 5 s).
const slack = 5 * time.Second

// outage is the table of mode auth, per phase: see the comment at the top
// of this file.
func (h *harness) outage(replicas [][]record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| phase | checks | confirmed End Users refused | stale passes | never-issued checks, breaker open: n, p99 / max ms | revoked let through past %v (within it) | authenticate calls at once on one replica, breaker open | replicas whose authenticate breaker opened | store breaker openings (replicas) |\n", slack)
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range h.phase {
		in := func(ns int64) bool { at := time.Unix(0, ns); return !at.Before(p.from) && at.Before(p.to) }
		checks, refused, stale, revokedPast, revokedWithin, mostAtOnce, authOpened, storeOpenings, storeReplicas := 0, 0, 0, 0, 0, 0, 0, 0, 0
		var never []time.Duration
		for _, recs := range replicas {
			open := openSpans(recs, string(management.BreakerAuthenticate))
			authn := []record{}
			opened, storeOpened := false, false
			for _, r := range recs {
				switch {
				case r.what == "breaker" && r.open && in(r.start) && r.outcome == string(management.BreakerAuthenticate):
					opened = true
				case r.what == "breaker" && r.open && in(r.start) && r.outcome == string(management.BreakerSharedStore):
					storeOpenings++
					storeOpened = true
				case r.what == "authn" && in(r.start) && open.covers(r.start):
					authn = append(authn, r)
				case r.what != "check" || !in(r.start):
				default:
					checks++
					pass := r.outcome == outcomeFresh || r.outcome == outcomeStale
					if r.outcome == outcomeStale {
						stale++
					}
					revoked := h.revoked[r.token] && !time.Unix(0, r.start).Before(h.forgotten)
					switch {
					case revoked && pass && time.Unix(0, r.start).Sub(h.forgotten) > slack:
						revokedPast++
					case revoked && pass:
						revokedWithin++
					case !revoked && r.token < h.spec.Valid && !pass:
						refused++
					case r.token >= h.spec.Valid && open.covers(r.start):
						never = append(never, r.took)
					}
				}
			}
			mostAtOnce = max(mostAtOnce, atOnce(authn))
			if opened {
				authOpened++
			}
			if storeOpened {
				storeReplicas++
			}
		}
		slices.Sort(never)
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d, %s / %s | %d (%d) | %d | %d | %d (%d) |\n", p.name, checks, refused, stale,
			len(never), ms(percentile(never, 99)), ms(percentile(never, 100)), revokedPast, revokedWithin, mostAtOnce, authOpened, storeOpenings, storeReplicas)
	}
	return b.String()
}

// spans are the times a breaker was open, as [from, to) in Unix ns.
type spans [][2]int64

// openSpans returns when the breaker name of one replica was open.
func openSpans(recs []record, name string) spans {
	var s spans
	var from int64 = -1
	for _, r := range recs {
		if r.what != "breaker" || r.outcome != name {
			continue
		}
		switch {
		case r.open && from < 0:
			from = r.start
		case !r.open && from >= 0:
			s = append(s, [2]int64{from, r.start})
			from = -1
		}
	}
	if from >= 0 {
		s = append(s, [2]int64{from, math.MaxInt64})
	}
	return s
}

func (s spans) covers(at int64) bool {
	for _, sp := range s {
		if at >= sp[0] && at < sp[1] {
			return true
		}
	}
	return false
}

// atOnce returns the most calls of calls that ran at once.
func atOnce(calls []record) int {
	most := 0
	for _, c := range calls {
		n := 0
		for _, d := range calls {
			if d.start <= c.start && d.start+int64(d.took) > c.start {
				n++
			}
		}
		most = max(most, n)
	}
	return most
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
			if at := time.Unix(0, r.start); (r.what == "get" || r.what == "check") && !at.Before(p.from) && at.Before(p.to) {
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
		t.Skip("the fleet harness: run by scripts/bench-fleet.sh harness (MANAGEMENT_FLEET_HARNESS=single, cluster or auth)")
	}
	n, err := strconv.Atoi(envOr("FLEET_REPLICAS", "16"))
	if err != nil {
		t.Fatal(err)
	}
	length, err := time.ParseDuration(envOr("FLEET_PHASE", "8s"))
	if err != nil {
		t.Fatal(err)
	}
	outage, err := time.ParseDuration(envOr("FLEET_AUTH_OUTAGE", "20s"))
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
	// The replicas reach the fake through a server that records, per End
	// User token, the authenticate calls.
	calls := &serviceLog{}
	front := httptest.NewServer(calls.wrap(srv.Handler()))
	t.Cleanup(front.Close)
	spec := harnessSpec{
		BaseURL: front.URL, ClientID: srv.ClientID, ClientSecret: srv.ClientSecret,
		Valid: 50, SST: sst, CtxTimeout: envOr("FLEET_CTX_TIMEOUT", "1") == "1",
		GetsPerSec: 640 / n, ChecksPerSec: 1200 / n, Deadline: 2 * time.Second, CheckDeadline: 2 * time.Second, CacheTTL: 4 * time.Second,
		Log: os.Getenv("FLEET_LOG") == "1",
	}
	if mode == "auth" {
		spec.CacheTTL, spec.StaleIfError, spec.CheckDeadline = 2*time.Second, time.Minute, 6*time.Second
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
		h = startHarness(t, srv, calls, n, spec)
		runSingle(t, h, s, length)
	case "cluster":
		c := startCluster(t)
		spec.Addrs, spec.Cluster = c.Addrs(), true
		h = startHarness(t, srv, calls, n, spec)
		runCluster(t, h, c, length)
	case "auth":
		s := startRedis(t)
		spec.Addrs = []string{s.Addr}
		h = startHarness(t, srv, calls, n, spec)
		runAuth(t, h, s, length, outage)
	default:
		t.Fatalf("MANAGEMENT_FLEET_HARNESS=%q: want single, cluster or auth", mode)
	}
	replicas := h.stop()
	tables := h.summary(replicas) + "\n" + h.sharing(replicas)
	if mode == "auth" {
		tables += "\n" + h.outage(replicas)
	}
	uptime, _ = os.ReadFile("/proc/loadavg")
	t.Logf("load average after: %s", strings.TrimSpace(string(uptime)))
	fmt.Println(tables)
}

// runAuth runs the service's outage: 5 issued tokens revoked and
// forgotten, and the authenticate endpoint hung for outage.
func runAuth(t *testing.T, h *harness, s *redisServer, length, outage time.Duration) {
	rdb := s.Client(t)
	var logs syncLog // a Forget that could not reach the store says so at Error
	client, err := management.NewClient(management.Config{BaseURL: h.spec.BaseURL, ClientID: h.spec.ClientID, ClientSecret: h.spec.ClientSecret,
		SharedStore: New(rdb), Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	auth := &management.Authenticator{Client: client, SharedStore: New(rdb), CacheTTL: h.spec.CacheTTL, StaleIfError: h.spec.StaleIfError}
	h.run("warm-up", 8*time.Second, nil, nil)
	h.run("calm", length, nil, nil)
	h.revoked = map[int]bool{}
	h.run(fmt.Sprintf("authenticate hung (%v)", outage), outage, func() {
		h.srv.DelayNext(managementtest.RouteAuthenticate, math.MaxInt, time.Hour) // each call waits until its caller gives up
		for i := range 5 {
			h.srv.RevokeEndUserToken(h.spec.Tokens[i])
			if err := auth.Forget(context.Background(), "Bearer "+h.spec.Tokens[i]); err != nil {
				t.Error(err)
			}
			h.revoked[i] = true
		}
		h.forgotten = time.Now()
		// A Forget that could not give its token a new epoch (the store
		// stalled) leaves the fleet accepting the token, as documented:
		// its revoked passes are not the SDK's doing.
		if n := strings.Count(logs.String(), "Forget could not"); n > 0 {
			t.Logf("%d of 5 Forgets could not reach the store: the revoked tokens' passes below follow from that", n)
		}
	}, h.srv.ClearFaults)
	h.run("after", 2*length, nil, nil)
}

// syncLog is a log buffer safe for concurrent writers.
type syncLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
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
		case "none":
			return
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
