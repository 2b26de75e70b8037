package fleet

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// changes records a Breaker's changes.
type changes struct {
	mu   sync.Mutex
	list []Change
}

func (c *changes) add(_ context.Context, ch Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, ch)
}

func (c *changes) all() []Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Change(nil), c.list...)
}

var errDown = errors.New("down")

// A Breaker opens on its first failure, refuses (and counts) operations
// for a cool-down jittered around CoolDown, then lets one probe through at
// a time; each failed probe doubles the cool-down up to MaxCoolDown, and a
// probe that succeeds closes it at once, reporting what it skipped.
func TestBreakerCoolDowns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen changes
		b := &Breaker{Threshold: 1, CoolDown: 100 * time.Millisecond, MaxCoolDown: 350 * time.Millisecond, OnChange: seen.add}
		ctx := context.Background()
		tk, ok := b.Allow()
		if !ok {
			t.Fatal("a closed Breaker refused an operation")
		}
		opened := time.Now()
		tk.Failed(ctx, errDown)
		if !b.IsOpen() {
			t.Fatal("the first failure did not open the Breaker")
		}
		// probe returns when the next probe is let through, having counted
		// the operations refused (one per millisecond) until then.
		skipped := int64(0)
		probe := func() (Ticket, time.Duration) {
			t.Helper()
			start := time.Now()
			for {
				if tk, ok := b.Allow(); ok {
					return tk, time.Since(start)
				}
				skipped++
				time.Sleep(time.Millisecond)
			}
		}
		nominal := 100 * time.Millisecond
		for i := range 4 {
			tk, waited := probe()
			if waited < nominal*8/10-time.Millisecond || waited > nominal*12/10+time.Millisecond {
				t.Errorf("cool-down %d: %v; want within 20%% of %v", i, waited, nominal)
			}
			if _, ok := b.Allow(); ok {
				t.Fatal("a second probe let through while the first runs")
			}
			skipped++
			tk.Failed(ctx, errDown)
			nominal = min(2*nominal, 350*time.Millisecond)
		}
		tk, _ = probe()
		tk.Succeeded(ctx)
		if b.IsOpen() {
			t.Fatal("a probe's success did not close the Breaker")
		}
		got := seen.all()
		if len(got) != 2 || !got[0].Open || got[1].Open {
			t.Fatalf("changes %+v; want one opening and one closing", got)
		}
		if got[0].Err != errDown || got[0].CoolDown < 80*time.Millisecond || got[0].CoolDown > 120*time.Millisecond {
			t.Errorf("opening %+v; want errDown and the first cool-down", got[0])
		}
		if got[1].Skipped != skipped || got[1].OpenFor != time.Since(opened) {
			t.Errorf("closing %+v; want %d skipped, open for %v", got[1], skipped, time.Since(opened))
		}
		if _, ok := b.Allow(); !ok {
			t.Error("a closed Breaker refused an operation")
		}
	})
}

// A Breaker that opens again within CoolDown of a probe closing it goes
// on from twice the cool-down it had; one that opens after a calm while
// starts from CoolDown again.
func TestBreakerFlapping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen changes
		b := &Breaker{Threshold: 1, CoolDown: 100 * time.Millisecond, MaxCoolDown: time.Second, OnChange: seen.add}
		ctx := context.Background()
		cycle := func(after time.Duration) time.Duration {
			t.Helper()
			time.Sleep(after)
			tk, _ := b.Allow()
			tk.Failed(ctx, errDown)
			got := seen.all()
			cool := got[len(got)-1].CoolDown
			time.Sleep(cool)
			probe, ok := b.Allow()
			if !ok {
				t.Fatal("no probe after the cool-down")
			}
			probe.Succeeded(ctx)
			return cool
		}
		within := func(got, nominal time.Duration) bool { return got >= nominal*8/10 && got <= nominal*12/10 }
		if c := cycle(0); !within(c, 100*time.Millisecond) {
			t.Errorf("first cool-down %v; want about 100ms", c)
		}
		if c := cycle(0); !within(c, 200*time.Millisecond) {
			t.Errorf("cool-down on opening again at once %v; want about 200ms", c)
		}
		if c := cycle(0); !within(c, 400*time.Millisecond) {
			t.Errorf("cool-down on opening again at once %v; want about 400ms", c)
		}
		if c := cycle(time.Second); !within(c, 100*time.Millisecond) {
			t.Errorf("cool-down on opening after a calm second %v; want about 100ms", c)
		}
	})
}

// With a Threshold, only failures in a row open the Breaker; a success
// between them starts the count again.
func TestBreakerThreshold(t *testing.T) {
	b := &Breaker{Threshold: 3, CoolDown: time.Second, MaxCoolDown: time.Second}
	ctx := context.Background()
	fail := func() {
		tk, ok := b.Allow()
		if !ok {
			t.Fatal("refused while closed")
		}
		tk.Failed(ctx, errDown)
	}
	fail()
	fail()
	tk, _ := b.Allow()
	tk.Succeeded(ctx)
	fail()
	fail()
	if b.IsOpen() {
		t.Fatal("open after two failures in a row")
	}
	fail()
	if !b.IsOpen() {
		t.Fatal("closed after three failures in a row")
	}
}

// The outcomes of operations let through before the Breaker last changed
// change nothing: a late failure does not open a Breaker a probe closed,
// nor does a late success close one that opened since.
func TestBreakerIgnoresStaleOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &Breaker{Threshold: 1, CoolDown: time.Second, MaxCoolDown: time.Second}
		ctx := context.Background()
		early, _ := b.Allow()
		late, _ := b.Allow()
		first, _ := b.Allow()
		first.Failed(ctx, errDown)
		early.Succeeded(ctx)
		if !b.IsOpen() {
			t.Fatal("an operation let through before the Breaker opened closed it")
		}
		time.Sleep(2 * time.Second)
		probe, _ := b.Allow()
		probe.Succeeded(ctx)
		late.Failed(ctx, errDown)
		if b.IsOpen() {
			t.Error("an operation let through before the Breaker opened opened it again after a probe closed it")
		}
	})
}

// A probe whose caller gave up gives its turn back: the next operation
// probes at once.
func TestBreakerAbstainedProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &Breaker{Threshold: 1, CoolDown: time.Second, MaxCoolDown: time.Second}
		tk, _ := b.Allow()
		tk.Failed(context.Background(), errDown)
		time.Sleep(2 * time.Second)
		probe, ok := b.Allow()
		if !ok {
			t.Fatal("no probe after the cool-down")
		}
		probe.Abstained()
		if _, ok := b.Allow(); !ok {
			t.Error("no probe after the previous one abstained")
		}
	})
}

// A forced operation runs whatever the state: its failure opens a closed
// Breaker and leaves an open one as it is; its success does not close an
// open one (only a probe does).
func TestBreakerForce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &Breaker{Threshold: 1, CoolDown: time.Second, MaxCoolDown: time.Second}
		ctx := context.Background()
		b.Force().Failed(ctx, errDown)
		if !b.IsOpen() {
			t.Fatal("a forced failure did not open a closed Breaker")
		}
		b.Force().Failed(ctx, errDown)
		b.Force().Succeeded(ctx)
		if !b.IsOpen() {
			t.Error("a forced success closed the Breaker")
		}
		time.Sleep(1300 * time.Millisecond) // past the first cool-down however jittered
		if _, ok := b.Allow(); !ok {
			t.Fatal("a forced failure while open lengthened the cool-down")
		}
	})
}

// Remaining is the rest of the cool-down while the Breaker refuses
// everything, 0 once a probe may run (and while it runs) and while it is
// closed; only the probe's ticket says Probe.
func TestBreakerRemaining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &Breaker{Threshold: 1, CoolDown: time.Second, MaxCoolDown: time.Second}
		ctx := context.Background()
		tk, _ := b.Allow()
		if b.Remaining() != 0 || tk.Probe() {
			t.Fatalf("closed: Remaining %v, Probe %t; want 0, false", b.Remaining(), tk.Probe())
		}
		tk.Failed(ctx, errDown)
		cool := b.Remaining()
		if cool < 800*time.Millisecond || cool > 1200*time.Millisecond {
			t.Fatalf("just opened: Remaining %v; want the jittered cool-down of 1s", cool)
		}
		time.Sleep(300 * time.Millisecond)
		if got := b.Remaining(); got != cool-300*time.Millisecond {
			t.Errorf("300ms later: Remaining %v; want %v", got, cool-300*time.Millisecond)
		}
		time.Sleep(cool)
		if got := b.Remaining(); got != 0 {
			t.Errorf("after the cool-down: Remaining %v; want 0", got)
		}
		probe, ok := b.Allow()
		if !ok || !probe.Probe() || b.Remaining() != 0 {
			t.Fatalf("the probe: %t, Probe %t, Remaining %v; want a probe and 0", ok, probe.Probe(), b.Remaining())
		}
		probe.Succeeded(ctx)
		if b.Remaining() != 0 || b.IsOpen() {
			t.Errorf("after a successful probe: Remaining %v, open %t", b.Remaining(), b.IsOpen())
		}
	})
}

// A nil Breaker lets everything through.
func TestNilBreaker(t *testing.T) {
	var b *Breaker
	tk, ok := b.Allow()
	if !ok || b.IsOpen() || b.Remaining() != 0 || tk.Probe() {
		t.Fatal("a nil Breaker refused an operation")
	}
	tk.Failed(context.Background(), errDown)
	b.Force().Succeeded(context.Background())
	tk.Abstained()
}

// Allow on a closed Breaker costs no allocation and no lock.
func BenchmarkBreakerClosed(b *testing.B) {
	br := &Breaker{Threshold: 1, CoolDown: time.Second, MaxCoolDown: time.Second}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tk, _ := br.Allow()
		tk.Succeeded(ctx)
	}
}

// With Forgive, successes wear a run of failures down rather than end it:
// Threshold failures in a row open the Breaker; a failure now and then
// among successes (one in nine or fewer) never adds up; failures on part
// of the operations (one in five, or a third, as a store failing on part
// of its keys) open it.
func TestBreakerForgive(t *testing.T) {
	ctx := context.Background()
	run := func(outcomes string) *Breaker {
		b := &Breaker{Threshold: 3, Forgive: 8, CoolDown: time.Second, MaxCoolDown: time.Second}
		for _, o := range outcomes {
			tk, ok := b.Allow()
			if !ok {
				break
			}
			if o == 'F' {
				tk.Failed(ctx, errDown)
			} else {
				tk.Succeeded(ctx)
			}
		}
		return b
	}
	for _, tc := range []struct {
		outcomes string
		open     bool
	}{
		{"FFF", true},
		{"FF", false},
		{"F" + strings.Repeat("S", 8) + "FF", false}, // one failure forgiven, then two
		{"FFSF", false}, // an answer took an eighth of one off
		{strings.Repeat("F"+strings.Repeat("S", 8), 40), false},         // a failure in nine: worn down each time
		{strings.Repeat("FSSSS", 10), true},                             // a failure in five adds up
		{strings.Repeat("FSS", 10), true},                               // a third of the operations failing
		{strings.Repeat("F"+strings.Repeat("S", 20), 30) + "FF", false}, // a lone failure among answers, again and again
	} {
		if b := run(tc.outcomes); b.IsOpen() != tc.open {
			t.Errorf("%s: open %v; want %v", tc.outcomes, b.IsOpen(), tc.open)
		}
	}
}
