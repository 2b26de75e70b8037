package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/errtext"
	"github.com/serviceconnect/management/managementtest"
	"github.com/spf13/cobra"
)

// FakeServeOptions are the flags of fake serve, and what fakeServeRun
// needs besides: NewCmdFakeServe fills them from the command line, tests
// fill them directly.
type FakeServeOptions struct {
	IO *IOStreams

	Listen string
	// Users and Things are the counts to generate; below zero, not given.
	Users, Things         int
	PageSize              int
	SeedUsers, SeedThings string
	// Debug logs each API request on standard error.
	Debug bool
	// Grace is how long a stop waits for the requests under way before it
	// cuts them off.
	Grace time.Duration
}

// defaultListen is fake serve's address: loopback, so that nothing beyond
// the machine reaches a service that guards nothing.
const defaultListen = "127.0.0.1:8080"

// shutdownGrace is how long a stop waits for the requests under way.
const shutdownGrace = 5 * time.Second

var fakeServeLong = `Serve the fake service over HTTP, for the tests of code in any language:
the fake of --fake (managementtest, the Go SDK's), as a process beside the app
under test. The app reaches it as it reaches the service; the test steers it
through control endpoints.

Standard output gets three lines, first, then nothing else (messages go to
standard error), for a script to read or source:

  MANAGEMENT_BASE_URL=http://127.0.0.1:8080
  MANAGEMENT_CLIENT_ID=` + fakeClientID + `
  MANAGEMENT_CLIENT_SECRET=<random, new at each run>

Data: the five Users and three Things of --fake; --users N and --things N
generate N instead (u-1..., thing-1..., every field filled, created a
millisecond apart; at most 100000 each); --seed-users and --seed-things read
the JSON lines of users export and things export. A seed file's bad line is
refused with its number, and nothing is served.

It listens on loopback, over plain HTTP (the SDK allows http there; elsewhere
set MANAGEMENT_ALLOW_INSECURE_HTTP=true). Another --listen address is allowed
with a warning; for 0.0.0.0 or [::] the printed URL names 127.0.0.1. It serves
until Ctrl-C or SIGTERM, lets the requests under way end (at most 5s), and
exits 0: stopping is how a server ends. --debug logs each API request on
standard error.

Control endpoints, with the printed client's Basic credentials (401
without), JSON in and out, bodies up to 1 MiB:

  POST   /_fake/end-user-tokens         {"user_id":"u-ada"}    201 {"access_token":"<token>"}
  POST   /_fake/end-user-tokens/revoke  {"access_token":"<token>"}     204
  POST   /_fake/faults   {"route":"GET /users/{user_id}","count":3,"status":503,"retry_after":"2s"}
                         {"route":"POST /authenticate","count":1,"delay":"5s"}  204
  DELETE /_fake/faults                  204: no fault pending
  POST   /_fake/expire-tokens           204: management tokens expire now
  POST   /_fake/users                   a User as the API reads it     201
  POST   /_fake/things                  a Thing as the API reads it    201
  GET    /_fake/requests                200 [{"method","route","path","status","time"}]
  POST   /_fake/reset                   204: the starting data again, no token, fault or log

A fault's count defaults to 1; its status is 200 to 599; retry_after and
delay are Go durations; its route is one of:

` + routeList + `

A mistake is answered 400 with what is wrong; an unknown User 404.
GET /_fake/requests lists the API's requests, oldest first, without
credentials; control requests are not in it.

Exit status: 0 once stopped, 1 when the address cannot be listened on (in
use), 2 for a usage error or a bad seed file.`

// routeList is the routes a fault may name, one a line, for the help.
var routeList = strings.Join(routeNames("  "), "\n")

// NewCmdFakeServe returns fake serve. runF, when not nil, is called with
// the options in place of fakeServeRun.
func NewCmdFakeServe(f *Factory, runF func(*FakeServeOptions) error) *cobra.Command {
	opts := &FakeServeOptions{IO: f.IO, Grace: shutdownGrace}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the fake service over HTTP, for tests in any language",
		Long:  fakeServeLong,
		Example: `  management fake serve
  management fake serve --listen 127.0.0.1:0 --users 250 --things 40 --page-size 20
  management fake serve --seed-users users.jsonl --seed-things things.jsonl
  management fake serve --listen 127.0.0.1:0 > fake.env &   # then, once it holds 3 lines: set -a; . ./fake.env; set +a`,
		Args: exactArgs(),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			// Global flags: known once the command line is parsed.
			if f.fake {
				return usagef("--fake runs a command against a fake inside the tool; fake serve is that fake as a service: leave --fake out")
			}
			if f.baseURL != "" || f.clientID != "" || f.secretStdin {
				return usagef("fake serve takes no --base-url, --client-id or --client-secret-stdin: it prints the address and credentials of the fake it serves")
			}
			for _, c := range []struct {
				flag string
				n    *int
			}{{"users", &opts.Users}, {"things", &opts.Things}} {
				switch {
				case !cmd.Flags().Changed(c.flag):
					*c.n = -1 // not given: check and startingData take it so
				case *c.n < 0:
					return usagef("--%s %d: give a count of 0 or more", c.flag, *c.n)
				}
			}
			opts.Debug = f.debug
			if runF != nil {
				return runF(opts)
			}
			return fakeServeRun(cmd.Context(), opts)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Listen, "listen", defaultListen, "`ADDR`, host:port, to listen on; port 0 picks a free port")
	fl.IntVar(&opts.Users, "users", 0, "generate `N` Users, u-1 to u-N, instead of the five of --fake")
	fl.IntVar(&opts.Things, "things", 0, "generate `N` Things, thing-1 to thing-N, instead of the three of --fake")
	fl.IntVar(&opts.PageSize, "page-size", managementtest.DefaultPageSize, "`N` items per page of a list")
	fl.StringVar(&opts.SeedUsers, "seed-users", "", "serve the Users of `FILE`: JSON lines as users export writes them")
	fl.StringVar(&opts.SeedThings, "seed-things", "", "serve the Things of `FILE`: JSON lines as things export writes them")
	return cmd
}

// check refuses flags that cannot go together or make no sense.
func (o *FakeServeOptions) check() error {
	for _, c := range []struct {
		flag     string
		n        int
		seed     string
		seedFlag string
	}{{"--users", o.Users, o.SeedUsers, "--seed-users"}, {"--things", o.Things, o.SeedThings, "--seed-things"}} {
		switch {
		case c.n > maxGenerated:
			return usagef("%s %d: at most %d", c.flag, c.n, maxGenerated)
		case c.n >= 0 && c.seed != "":
			return usagef("%s and %s both choose the %s: give one of them", c.seedFlag, c.flag, strings.TrimPrefix(c.flag, "--"))
		}
	}
	if o.PageSize < 1 {
		return usagef("--page-size %d: it must be at least 1", o.PageSize)
	}
	return nil
}

func fakeServeRun(ctx context.Context, opts *FakeServeOptions) error {
	if err := opts.check(); err != nil {
		return err
	}
	addr, err := listenAddress(opts.Listen)
	if err != nil {
		return err
	}
	data, err := startingData(dataFlags{users: opts.Users, things: opts.Things, seedUsers: opts.SeedUsers, seedThings: opts.SeedThings})
	if err != nil {
		return err
	}
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(opts.PageSize),
		managementtest.WithCredentials(fakeClientID, rand.Text()))
	data.seed(srv)

	ln, err := listen(addr)
	if err != nil {
		return err
	}
	baseURL, loopback := advertised(ln.Addr().(*net.TCPAddr))
	if _, err := fmt.Fprintf(opts.IO.Out, "%s=%s\n%s=%s\n%s=%s\n",
		management.EnvBaseURL, baseURL, management.EnvClientID, srv.ClientID, management.EnvClientSecret, srv.ClientSecret); err != nil {
		ln.Close()
		return errtext.Errorf("writing the fake's address and credentials: %w", err)
	}
	if !loopback {
		fmt.Fprintln(opts.IO.ErrOut, exposedWarning(ln.Addr()))
	}
	fmt.Fprintf(opts.IO.ErrOut, "management: the fake serves %d Users and %d Things (pages of %d) at %s, control endpoints under %s; Ctrl-C or SIGTERM stops it\n",
		len(data.users), len(data.things), opts.PageSize, baseURL, controlPrefix)

	var debug *slog.Logger
	if opts.Debug {
		debug = slog.New(slog.NewTextHandler(opts.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	hs := &http.Server{
		Handler:           newServedFake(srv, data, debug),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(opts.IO.ErrOut, errtext.Prefix, 0),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return errtext.Errorf("serving the fake: %w", err)
	case <-ctx.Done():
	}
	stop(hs, opts.Grace, opts.IO.ErrOut)
	<-served // http.ErrServerClosed
	return nil
}

// stop ends hs: it stops listening, lets the requests under way end
// within grace, and cuts off those still running then.
func stop(hs *http.Server, grace time.Duration, errOut io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		_ = hs.Close()
		fmt.Fprintf(errOut, "management: the fake stopped; the requests still under way after %v were cut off\n", grace)
		return
	}
	fmt.Fprintln(errOut, "management: the fake stopped")
}

// listenAddress checks --listen: host:port, the port a number (0 for a
// free one).
func listenAddress(addr string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return "", usagef("--listen %q: want host:port with a port number, such as %s (port 0 picks a free port)", addr, defaultListen)
	}
	return addr, nil
}

// listen listens on addr; an address in use is said so, with what to do.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, errtext.Errorf("cannot listen on %s: the address is in use (another fake?): stop what listens there, or choose another with --listen (port 0 picks a free port)", addr)
	case err != nil:
		return nil, errtext.Errorf("cannot listen on %s: %w", addr, err)
	}
	return ln, nil
}

// exposedWarning is what fake serve says when it listens on addr, beyond
// loopback.
func exposedWarning(addr net.Addr) string {
	return fmt.Sprintf("management: warning: the fake listens on %s, beyond this machine's loopback: whoever reaches it with the printed credentials can use it, over plain HTTP. It guards nothing real; clients on other machines need %s=true.",
		addr, management.EnvAllowInsecureHTTP)
}

// advertised returns the base URL to print for the listener's address,
// and whether that address is loopback. An unspecified address (0.0.0.0,
// ::) listens on every interface, loopback's included: the URL names
// 127.0.0.1, which the SDK accepts over http.
func advertised(a *net.TCPAddr) (baseURL string, loopback bool) {
	ip := a.IP
	if ip.IsUnspecified() || ip == nil {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(a.Port)), a.IP.IsLoopback()
}
