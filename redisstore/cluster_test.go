package redisstore

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/serviceconnect/management"
)

// A Redis Cluster of 3 masters and 3 replicas, started by a test on free
// loopback ports and stopped when it ends.

// clusterNodeTimeout is the cluster's failure detection time: short, so
// that a failover takes a couple of seconds and the tests stay quick.
const clusterNodeTimeout = time.Second

type cluster struct {
	nodes []*redisServer
}

// startCluster starts 6 cluster-enabled redis-servers, joins them with
// redis-cli --cluster create (3 masters, 1 replica each), and waits until
// every node sees the whole cluster up and every replica is in sync.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	cli := lookBinary(t, "redis-cli")
	c := &cluster{}
	for range 6 {
		c.nodes = append(c.nodes, startRedisArgs(t, func(port int) []string {
			bus := freePort(t) // the default, port+10000, may be taken or out of range
			for bus == port {
				bus = freePort(t)
			}
			return []string{
				"--cluster-enabled", "yes",
				"--cluster-port", strconv.Itoa(bus),
				"--cluster-node-timeout", strconv.Itoa(int(clusterNodeTimeout / time.Millisecond)),
				"--cluster-replica-validity-factor", "0", // a replica always stands for election, however long its master was gone
				"--repl-diskless-sync-delay", "0", // replicas sync at once, not after the default 5 s
			}
		}))
	}
	args := append(c.Addrs(), "--cluster-replicas", "1", "--cluster-yes")
	out, err := exec.Command(cli, append([]string{"--cluster", "create"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitHealthy(t, nil)
	return c
}

// Addrs returns the address of every node.
func (c *cluster) Addrs() []string {
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.Addr)
	}
	return addrs
}

// Client returns a cluster client of the nodes, as the package's doc sets
// one up, closed when the test ends.
func (c *cluster) Client(t testing.TB) *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	addr   string // host:port, without the bus port
	flags  []string
	master bool
	failed bool
	slots  int // how many slots it serves
}

// view returns the cluster as the node at addr sees it.
func view(ctx context.Context, addr string) ([]clusterNode, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	text, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	var nodes []clusterNode
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := clusterNode{addr: strings.Split(f[1], "@")[0], flags: strings.Split(f[2], ",")}
		n.master = slices.Contains(n.flags, "master")
		n.failed = slices.Contains(n.flags, "fail") || slices.Contains(n.flags, "fail?") || f[7] != "connected"
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated
			}
			lo, hi, found := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if found {
				b, _ = strconv.Atoi(hi)
			}
			n.slots += b - a + 1
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// healthy reports why the cluster, as the live nodes see it, is not yet 3
// masters serving every slot with a replica each in sync ("" when it is).
// gone are the nodes the test stopped.
func (c *cluster) healthy(ctx context.Context, gone []*redisServer) string {
	live := 0
	for _, n := range c.nodes {
		if slices.Contains(gone, n) {
			continue
		}
		live++
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
		info, err := rdb.ClusterInfo(ctx).Result()
		repl, err2 := rdb.Info(ctx, "replication").Result()
		rdb.Close()
		switch {
		case err != nil || err2 != nil:
			return fmt.Sprintf("%s: %v %v", n.Addr, err, err2)
		case !strings.Contains(info, "cluster_state:ok"):
			return n.Addr + ": cluster_state is not ok"
		case strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up"):
			return n.Addr + ": replica not in sync"
		}
		nodes, err := view(ctx, n.Addr)
		if err != nil {
			return fmt.Sprintf("%s: %v", n.Addr, err)
		}
		masters, slots, ok := 0, 0, 0
		for _, m := range nodes {
			if m.failed {
				continue
			}
			ok++
			if m.master && m.slots > 0 {
				masters++
				slots += m.slots
			}
		}
		if masters != 3 || slots != 16384 || ok != len(c.nodes)-len(gone) {
			return fmt.Sprintf("%s sees %d masters serving %d slots, %d nodes up", n.Addr, masters, slots, ok)
		}
	}
	if live == 0 {
		return "no node left"
	}
	return ""
}

// waitHealthy waits until healthy, for at most 20 s, and returns when it
// saw the cluster healthy.
func (c *cluster) waitHealthy(t testing.TB, gone []*redisServer) time.Time {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		why := c.healthy(ctx, gone)
		cancel()
		if why == "" {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster is not healthy after 20 s: %s", why)
		}
		time.Sleep(20 * time.Millisecond) // polling the servers' state, not timing a behaviour
	}
}

// masterOf returns the node that serves key's slot now, as a new cluster
// client sees the slots, whether the key exists at the moment or not: the
// fleet's token key lapses with its token, and is absent from then until
// the next refresh stores it (asking the masters whether they hold it
// found none, 1 run in 20 on a busy host).
func (c *cluster) masterOf(t testing.TB, key string) *redisServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := c.Client(t).MasterForKey(ctx, key)
	if err == nil {
		for _, s := range c.nodes {
			if s.Addr == m.Options().Addr {
				return s
			}
		}
	}
	t.Fatalf("no node serves the slot of %q: %v", key, err)
	return nil
}

// keys returns the keys matching pattern on every master.
func (c *cluster) keys(t testing.TB, pattern string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var all []string
	ch := make(chan []string, 6)
	err := c.Client(t).ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		ks, err := m.Keys(ctx, pattern).Result()
		ch <- ks
		return err
	})
	close(ch)
	for ks := range ch {
		all = append(all, ks...)
	}
	if err != nil {
		t.Fatalf("KEYS %s: %v", pattern, err)
	}
	slices.Sort(all)
	return all
}

// The store's contract and the fleet's sharing hold on a Cluster, with the
// keys spread over every master.
func TestCluster(t *testing.T) {
	c := startCluster(t)
	rdb := c.Client(t)
	runContract(t, rdb)
	t.Run("FleetFetchesOneTokenPerLifetime", func(t *testing.T) {
		flush(t, rdb)
		testFleetFetchesOneToken(t, rdb)
	})
	t.Run("FleetAsksOncePerEndUserToken", func(t *testing.T) {
		flush(t, rdb)
		testFleetAsksOnce(t, rdb)
	})
	t.Run("KeysOnEveryMaster", func(t *testing.T) {
		flush(t, rdb)
		srv := seeded(t)
		f := newFleet(t, srv, rdb, 2)
		errs := make([]error, 30) // tokens checked at once, each on both replicas
		var wg sync.WaitGroup
		for i := range errs {
			tok := srv.IssueEndUserToken("u-1")
			wg.Go(func() {
				errs[i] = errors.Join(f.each(func(r replica) error { _, err := check(r.auth, tok); return err })...)
			})
		}
		wg.Wait()
		noErrors(t, errs)
		var holding atomic.Int32 // ForEachMaster runs fn on the masters at once
		err := rdb.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
			n, err := m.DBSize(ctx).Result()
			if n > 0 {
				holding.Add(1)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := holding.Load(); got != 3 {
			t.Errorf("%d of 3 masters hold keys after 30 verdicts; want every one", got)
		}
	})
	// Last: it kills the replicas.
	t.Run("DeadSeedsBoundFirstCall", func(t *testing.T) { testDeadSeedsBoundFirstCall(t, c) })
}

// With dead nodes among the seeds a client starts from (here the
// replicas, so that the cluster stays up), a replica's first call is
// bounded by the SDK's SharedStoreTimeout, although go-redis's first command
// may take longer whatever its context says: it looks up the command table
// with a context of its own, and retries a refused dial.
func testDeadSeedsBoundFirstCall(t *testing.T, c *cluster) {
	var dead []*redisServer
	for _, n := range c.nodes {
		if nodes, err := view(context.Background(), n.Addr); err == nil && !slices.ContainsFunc(nodes, func(m clusterNode) bool {
			return m.addr == n.Addr && m.master
		}) {
			dead = append(dead, n) // the replicas: the cluster stays up without them
		}
	}
	for _, n := range dead {
		n.Stop()
	}

	raw := make([]time.Duration, 8)
	var wg sync.WaitGroup
	for i := range raw {
		rdb := c.Client(t)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), failoverStoreTimeout)
			defer cancel()
			start := time.Now()
			_ = rdb.Get(ctx, "k").Err()
			raw[i] = time.Since(start).Round(time.Millisecond)
		})
	}
	wg.Wait()
	t.Logf("go-redis alone, first GET with a %v deadline on fresh clients: %v", failoverStoreTimeout, raw)

	srv := seeded(t)
	f := startFleet(t, srv, 8, func() management.SharedStore { return New(c.Client(t)) }, func(cfg *management.Config) {
		cfg.SharedStoreTimeout = failoverStoreTimeout
	})
	// The first call reads the token from the store, fetches one when the
	// read fails, and stores it: two store operations at most, each bounded,
	// beyond the host's own delay: how far go-redis alone overran its
	// deadline just before (up to 1.2 s on a 2-core host with a load
	// average of 12 to 20).
	host := max(slices.Max(raw)-failoverStoreTimeout, 0)
	bound := 2*failoverStoreTimeout + 250*time.Millisecond + host
	var took []time.Duration
	for _, r := range f.nodes {
		start := time.Now()
		if _, err := r.client.Users.Get(context.Background(), "u-1"); err != nil {
			t.Errorf("first call: %v", err)
		}
		took = append(took, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("the SDK's first call on fresh replicas: %v", took)
	if slowest := slices.Max(took); slowest > bound {
		t.Errorf("the slowest first call took %v; want at most %v (the store's timeout bounds each operation; host delay %v)", slowest, bound, host)
	}
}
