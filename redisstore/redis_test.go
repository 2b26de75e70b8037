package redisstore

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	// go-redis logs every refused dial to the standard logger; the tests kill
	// servers on purpose, and assert what the SDK sees instead.
	redis.SetLogger(quiet{})
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// redisServer is a redis-server process started by a test on a free
// loopback port, with persistence off. It is stopped when the test ends.
type redisServer struct {
	Addr string
	cmd  *exec.Cmd
}

// lookBinary returns the path of a server binary the test needs. Without it
// the test is skipped, unless MANAGEMENT_REQUIRE_SERVERS is set (as CI
// does): then it fails, so that a green run never means that nothing was
// tested.
func lookBinary(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("MANAGEMENT_REQUIRE_SERVERS") != "" {
			t.Fatalf("%s is not installed (MANAGEMENT_REQUIRE_SERVERS is set): %v", name, err)
		}
		t.Skipf("%s is not installed: %v", name, err)
	}
	return bin
}

// startRedis starts a redis-server for t, with extra arguments appended to
// its command line.
func startRedis(t testing.TB, extra ...string) *redisServer {
	t.Helper()
	bin := lookBinary(t, "redis-server")
	port := freePort(t)
	args := append([]string{
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes",
		"--dir", t.TempDir()}, extra...)
	cmd := exec.Command(bin, args...)
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

// Pause stops the server's process (SIGSTOP): it keeps its connections and
// accepts new ones, but answers nothing until Resume, as a hung host does.
func (s *redisServer) Pause(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP of redis-server: %v", err)
	}
}

// Resume lets a paused server go on (SIGCONT).
func (s *redisServer) Resume(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT of redis-server: %v", err)
	}
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
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
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
