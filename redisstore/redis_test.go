package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
	Addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has exited and been waited for
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
	return startRedisArgs(t, func(int) []string { return extra })
}

// startRedisArgs starts a redis-server for t on a free port, with the
// arguments extra returns for that port appended to its command line. A
// port found free may be taken by another process (another module's
// tests) before redis-server binds it: redis-server then exits, and is
// started again on other ports, up to 5 times.
func startRedisArgs(t testing.TB, extra func(port int) []string) *redisServer {
	t.Helper()
	bin := lookBinary(t, "redis-server")
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		args := append([]string{
			"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--save", "", "--appendonly", "no", "--protected-mode", "yes",
			"--dir", t.TempDir()}, extra(port)...)
		s := &redisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		s.start(t, exec.Command(bin, args...))
		err := s.waitReady()
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		s.Stop()
		if !errors.Is(err, errExited) || attempt == 5 {
			t.Fatalf("redis-server %s: %v", strings.Join(args, " "), err)
		}
	}
}

// start starts cmd as s's process, and waits for it in the background.
func (s *redisServer) start(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(s.exited)
}

// Stop kills the server and waits for it; calling it again does nothing.
func (s *redisServer) Stop() {
	_ = s.cmd.Process.Kill() // fails, harmlessly, once it has exited
	<-s.exited
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

// errExited is waitReady's error when the server exited before it
// answered: on a port taken meanwhile, or a bus port the same as its own.
var errExited = errors.New("exited before it answered PING")

// waitReady waits until the server answers PING (it takes a few
// milliseconds to start), for at most 10 s.
func (s *redisServer) waitReady() error {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return errExited
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to PING on %s in 10 s: %w", s.Addr, err)
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

// A redis-server that cannot bind a port it was given exits; startRedisArgs
// then starts it again on other ports.
func TestStartRedisRetriesWhenItExits(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var calls int
	s := startRedisArgs(t, func(int) []string {
		calls++
		if calls == 1 { // a cluster bus port another process holds
			return []string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(taken.Addr().(*net.TCPAddr).Port)}
		}
		return nil
	})
	if calls != 2 {
		t.Errorf("redis-server started %d times; want 2", calls)
	}
	if err := s.Client(t).Ping(context.Background()).Err(); err != nil {
		t.Errorf("PING: %v", err)
	}
}
