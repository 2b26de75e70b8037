package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// EnvEndUserToken is the environment variable token check reads the End
// User access token from.
const EnvEndUserToken = "MANAGEMENT_END_USER_TOKEN"

// Factory holds what every command needs: the streams, and the SDK client
// built from the environment and the global flags on first use. Tests
// fill it; main uses NewFactory.
type Factory struct {
	IO *IOStreams
	// HTTPClient, when set, is the HTTP client under the SDK's retries
	// (Config.HTTPClient). Tests use it to stage failures.
	HTTPClient *http.Client
	// Version is the tool's version, in the User-Agent it sends.
	Version string

	// The global flags.
	baseURL     string
	clientID    string
	secretStdin bool
	fake        bool
	debug       bool

	stdin  *bufio.Reader // IO.In, read line by line, then whole
	client *management.Client
	cfg    management.Config      // client's
	srv    *managementtest.Server // the --fake server
}

// NewFactory returns a Factory for the streams.
func NewFactory(streams *IOStreams) *Factory {
	return &Factory{IO: streams, Version: version()}
}

// noConfig is what the tool says when nothing configures it.
const noConfig = `management: not configured. Set the service's address and credentials in the environment:

  export ` + management.EnvBaseURL + `=https://management.example.com
  export ` + management.EnvClientID + `=<client id>
  export ` + management.EnvClientSecret + `=<client secret>

--base-url and --client-id override the first two. The secret is read from the
environment only, or from the first line of standard input with
--client-secret-stdin: never from an argument, which other users can see.

To try the tool offline, against a built-in fake service:

  management --fake users list`

// Client returns the SDK client the global flags and the environment
// configure, built on first use.
func (f *Factory) Client() (*management.Client, error) {
	if f.client != nil {
		return f.client, nil
	}
	cfg, err := f.config()
	if err != nil {
		return nil, err
	}
	c, err := management.NewClient(cfg)
	if err != nil {
		return nil, usageError{err: err}
	}
	f.client, f.cfg = c, cfg
	return c, nil
}

// service is the service the client reaches, as an export's checkpoint
// records it: never the secret. The path prefix is the SDK's, its default
// filled in (Config's JSON form says it). Call it after Client.
func (f *Factory) service() serviceID {
	var effective struct {
		PathPrefix string `json:"path_prefix"`
	}
	if data, err := json.Marshal(f.cfg); err == nil {
		_ = json.Unmarshal(data, &effective)
	}
	return serviceID{
		BaseURL:    strings.TrimRight(f.cfg.BaseURL, "/"),
		PathPrefix: strings.TrimRight(effective.PathPrefix, "/"),
		ClientID:   f.cfg.ClientID,
	}
}

// config returns the SDK configuration: the fake's with --fake, else the
// environment's (management.ConfigFromEnv) with the flags over it.
func (f *Factory) config() (management.Config, error) {
	cfg, err := f.baseConfig()
	if err != nil {
		return cfg, err
	}
	if f.HTTPClient != nil {
		cfg.HTTPClient = f.HTTPClient
	}
	cfg.UserAgent = strings.TrimSpace(cfg.UserAgent + " management-cli/" + f.Version)
	if f.debug {
		cfg.Logger = slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return cfg, nil
}

func (f *Factory) baseConfig() (management.Config, error) {
	if f.fake {
		if f.baseURL != "" || f.clientID != "" || f.secretStdin {
			return management.Config{}, usagef("--fake cannot be combined with --base-url, --client-id or --client-secret-stdin")
		}
		return f.fakeServer().Config(), nil
	}
	cfg, envErr := management.ConfigFromEnv()
	if f.baseURL != "" {
		cfg.BaseURL = f.baseURL
	}
	if f.clientID != "" {
		cfg.ClientID = f.clientID
	}
	if f.secretStdin {
		secret, err := f.readLine("--client-secret-stdin")
		if err != nil {
			return cfg, err
		}
		cfg.ClientSecret = secret
	}
	if cfg.BaseURL == "" && cfg.ClientID == "" && cfg.ClientSecret == "" {
		return cfg, usageError{err: said(noConfig)}
	}
	problems := malformed(envErr)
	for _, v := range []struct{ value, name string }{
		{cfg.BaseURL, management.EnvBaseURL + " (or --base-url)"},
		{cfg.ClientID, management.EnvClientID + " (or --client-id)"},
		{cfg.ClientSecret, management.EnvClientSecret + " (or --client-secret-stdin)"},
	} {
		if v.value == "" {
			problems = append(problems, v.name+" is not set")
		}
	}
	if len(problems) > 0 {
		return cfg, usagef("configuration: %s", strings.Join(problems, "; "))
	}
	return cfg, nil
}

// configFlags returns the Config fields this command line's flags set,
// with the flag that set each: the SDK names such a field as a field, and
// the operator reads the flag.
func (f *Factory) configFlags() map[string]string {
	flags := map[string]string{}
	if f.baseURL != "" {
		flags["BaseURL"] = "--base-url"
	}
	if f.clientID != "" {
		flags["ClientID"] = "--client-id"
	}
	if f.secretStdin {
		flags["ClientSecret"] = "--client-secret-stdin"
	}
	return flags
}

// malformed returns the problems ConfigFromEnv found other than a missing
// base URL, client id or secret, which the flags may supply: the
// variables that are set but cannot be parsed.
func malformed(envErr error) []string {
	var e *management.EnvError
	if !errors.As(envErr, &e) {
		return nil
	}
	return e.Malformed
}

// readLine reads one line of standard input, for a secret given there.
// Standard input is read in order: the client secret's line first, then
// the End User token's, then a JSON document.
func (f *Factory) readLine(flag string) (string, error) {
	line, err := f.input().ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return "", usagef("%s: nothing on standard input", flag)
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.TrimSpace(line) == "" {
		return "", usagef("%s: the line read from standard input is empty", flag)
	}
	return line, nil
}

// input is standard input, buffered once for every reader.
func (f *Factory) input() *bufio.Reader {
	if f.stdin == nil {
		f.stdin = bufio.NewReader(f.IO.In)
	}
	return f.stdin
}

// fakeServer returns the --fake server, started and seeded on first use.
func (f *Factory) fakeServer() *managementtest.Server {
	if f.srv == nil {
		f.srv = newFake()
	}
	return f.srv
}

// version is the tool's module version, or "devel" when the build
// recorded none (go run, -buildvcs=false).
func version() string {
	if v := buildVersion(); v != "" && v != "(devel)" {
		return v
	}
	return "devel"
}

// prepare chooses the output format (allFormats; the default depends on
// whether standard output is a terminal) and builds the client: the first
// steps of every command that prints what the service answered.
func prepare(streams *IOStreams, client func() (*management.Client, error), output string) (format, *management.Client, error) {
	out, err := chooseFormat(output, streams.IsStdoutTTY(), allFormats...)
	if err != nil {
		return out, nil, err
	}
	c, err := client()
	return out, c, err
}
