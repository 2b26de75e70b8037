package redisstore

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server process started by a test on a free
// loopback port, with persistence off. It is stopped when the test ends.
type redisServer struct {
	Addr string
	cmd  *exec.Cmd
}

// startRedis starts a redis-server for t. Without the binary the test is
// skipped, unless MANAGEMENT_REQUIRE_SERVERS is set (as CI does): then it
// fails, so that a green run never means that nothing was tested.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("MANAGEMENT_REQUIRE_SERVERS") != "" {
			t.Fatalf("redis-server is not installed (MANAGEMENT_REQUIRE_SERVERS is set): %v", err)
		}
		t.Skipf("redis-server is not installed: %v", err)
	}
	port := freePort(t)
	cmd := exec.Command(bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes",
		"--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	s := &redisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd}
	t.Cleanup(s.Stop)
	s.waitReady(t)
	return s
}

// Stop kills the server and waits for it; calling it again does nothing.
func (s *redisServer) Stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// waitReady waits until the server answers PING (it takes a few
// milliseconds to start), for at most 10 s.
func (s *redisServer) waitReady(t testing.TB) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer PING: %v", s.Addr, err)
		}
		time.Sleep(10 * time.Millisecond) // polling a process's start-up, not timing a behaviour
	}
}

// Client returns a go-redis client of the server, closed when the test ends.
func (s *redisServer) Client(t testing.TB) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
