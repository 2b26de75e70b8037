package cli

import (
	"strings"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// TestUsageErrors: a mistake on the command line or in the configuration
// exits 2, says what is wrong in one line, and points to the help of the
// command: what a person sees, whole.
func TestUsageErrors(t *testing.T) {
	clearEnv(t)
	cases := []struct {
		name string
		args []string
		want string // the first line, after "management: "
		help string // the command whose help the second line points to
	}{
		{"unknown command", []string{"--fake", "userz"}, `unknown command "userz" for "management" (did you mean "users"?)`, "management"},
		{"unknown subcommand", []string{"--fake", "users", "gett"}, `unknown command "gett" for "management users" (did you mean "get"?)`, "management users"},
		{"unknown flag", []string{"--fake", "users", "list", "--bogus"}, "unknown flag: --bogus", "management users list"},
		{"missing argument", []string{"--fake", "users", "get"}, "users get takes 1 argument(s), USER_ID; got 0", "management users get"},
		{"extra argument", []string{"--fake", "users", "list", "x"}, `users list takes no arguments; got "x"`, "management users list"},
		{"empty argument", []string{"--fake", "things", "get", " "}, "PHYSICAL_ID is empty", "management things get"},
		{"bad output", []string{"--fake", "users", "list", "-o", "xml"}, `--output "xml": want one of table, json, jsonl, csv`, "management users list"},
		{"table export", []string{"--fake", "users", "export", "-o", "table"}, `--output "table": want one of jsonl, json, csv`, "management users export"},
		{"bad order", []string{"--fake", "things", "list", "--order-by", "name"}, `--order-by "name": want createdAt or updatedAt`, "management things list"},
		{"bad direction", []string{"--fake", "things", "list", "--direction", "up"}, `--direction "up": want asc or desc`, "management things list"},
		{"link and order", []string{"--fake", "users", "list", "--next-page", "/x?page=1", "--direction", "asc"},
			"--next-page cannot be combined with --order-by or --direction: the link carries its own order", "management users list"},
		{"negative pages", []string{"--fake", "users", "list", "--pages", "-1"}, "--pages -1: want 0 (all) or more", "management users list"},
		{"checkpoint without out", []string{"--fake", "users", "export", "--checkpoint", "c"},
			"--checkpoint needs --out: an export to standard output cannot be resumed", "management users export"},
		{"fake and base url", []string{"--fake", "--base-url", "https://x.example", "users", "list"},
			"--fake cannot be combined with --base-url, --client-id or --client-secret-stdin", "management users list"},
		{"associate without model", []string{"--fake", "users", "associate", "u-ada", "x"}, "--model and --firmware-version are required", "management users associate"},
		{"update nothing", []string{"--fake", "things", "update", "lamp-7"},
			"nothing to update: give --name, --firmware-version, --last-seen, --status, --set, --unset or --json", "management things update"},
		{"update json and flags", []string{"--fake", "things", "update", "lamp-7", "--json", "-", "--name", "x"},
			"--json cannot be combined with the other update flags", "management things update"},
		{"update bad set", []string{"--fake", "things", "update", "lamp-7", "--set", "label=hall"},
			`--set label: the value is not JSON (a string is quoted: label='"text"')`, "management things update"},
		{"update set twice", []string{"--fake", "things", "update", "lamp-7", "--set", "a=1", "--unset", "a"}, "custom setting a is given twice", "management things update"},
		{"update bad status", []string{"--fake", "things", "update", "lamp-7", "--status", "low"}, `--status "low": want name=value`, "management things update"},
		{"update bad time", []string{"--fake", "things", "update", "lamp-7", "--last-seen", "yesterday"},
			`--last-seen "yesterday": want "now" or an RFC 3339 time such as 2026-01-05T09:00:00Z`, "management things update"},
		{"update missing file", []string{"--fake", "things", "update", "lamp-7", "--json", "/nonexistent/update.json"},
			"--json: open /nonexistent/update.json: no such file or directory", "management things update"},
		{"token without token", []string{"--base-url", "https://x.example", "token", "check"},
			"configuration: MANAGEMENT_CLIENT_ID (or --client-id) is not set; MANAGEMENT_CLIENT_SECRET (or --client-secret-stdin) is not set", "management token check"},
		{"control characters", []string{"--fake", "users", "list", "--output", "x\x1b[2J\n"}, `--output "x\x1b[2J\n": want one of table, json, jsonl, csv`, "management users list"},
		{"control characters in a flag's name", []string{"--fake", "users", "list", "--\x1b[2J"}, `unknown flag: --\x1b[2J`, "management users list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, c.args...)
			want := "management: " + c.want + "\nRun '" + c.help + " --help' for usage.\n"
			if r.code != ExitUsage || r.stderr != want || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr\n%q\nwant %d, nothing, and\n%q", r.code, r.stdout, r.stderr, ExitUsage, want)
			}
		})
	}
}

// TestUpdateDocumentErrors: a --json document that is not a PATCH body
// is a usage error that says why.
func TestUpdateDocumentErrors(t *testing.T) {
	clearEnv(t)
	for doc, want := range map[string]string{
		`{"nmae": "x"}`:                         `unknown field "nmae"`,
		`{"name": "x"} {"name": "y"}`:           "more than one JSON value",
		`{}`:                                    "the document updates nothing",
		`{"statuses": [{"status_value": "x"}]}`: "every status needs a name",
		`[1]`:                                   "not a PATCH document",
	} {
		r := env{stdin: doc}.run(t, "--fake", "things", "update", "lamp-7", "--json", "-")
		if r.code != ExitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("document %s: exit %d, stderr %q; want %d and %q", doc, r.code, r.stderr, ExitUsage, want)
		}
	}
}

// TestNoConfiguration: with nothing configured, any command that needs
// the service prints the tool's help on what to set, whole, its lines as
// written (its own words are never escaped), without a pointer to --help
// (the message is the help), and exits 2. TestNoConfigurationOnTerminal
// has the text as a terminal shows it.
func TestNoConfiguration(t *testing.T) {
	clearEnv(t)
	for _, args := range [][]string{{"users", "list"}, {"things", "get", "lamp-7"}, {"users", "export", "--out", "users.jsonl"}, {"token", "check"}} {
		r := runCLI(t, args...)
		if r.code != ExitUsage || r.stderr != noConfig+"\n" || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr\n%s\nwant %d, nothing, and\n%s", args, r.code, r.stdout, r.stderr, ExitUsage, noConfig)
		}
	}
}

// TestConfigurationProblems: a missing or malformed variable is named,
// never its value; the flags supply what the environment lacks.
func TestConfigurationProblems(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	seedUsers(srv, 3)

	t.Run("missing secret", func(t *testing.T) {
		clearEnv(t)
		r := runCLI(t, "--base-url", srv.URL, "--client-id", srv.ClientID, "users", "list")
		want := "management: configuration: MANAGEMENT_CLIENT_SECRET (or --client-secret-stdin) is not set\nRun 'management users list --help' for usage.\n"
		if r.code != ExitUsage || r.stderr != want {
			t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, ExitUsage, want)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		e := useServer(t, srv)
		t.Setenv(management.EnvMaxRetries, "many-secret-value")
		r := e.run(t, "users", "list")
		want := "management: configuration: MANAGEMENT_MAX_RETRIES is not an integer\nRun 'management users list --help' for usage.\n"
		if r.code != ExitUsage || r.stderr != want {
			t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, ExitUsage, want)
		}
	})
	t.Run("flags over environment", func(t *testing.T) {
		e := useServer(t, srv)
		t.Setenv(management.EnvBaseURL, "https://elsewhere.invalid")
		t.Setenv(management.EnvClientID, "someone-else")
		r := e.run(t, "--base-url", srv.URL, "--client-id", srv.ClientID, "users", "list")
		if r.code != ExitOK || len(lines(r.stdout)) != 3 {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("secret from stdin", func(t *testing.T) {
		e := useServer(t, srv)
		t.Setenv(management.EnvClientSecret, "")
		e.stdin = srv.ClientSecret + "\n"
		r := e.run(t, "--client-secret-stdin", "users", "list")
		if r.code != ExitOK || len(lines(r.stdout)) != 3 {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		e := useServer(t, srv)
		t.Setenv(management.EnvClientSecret, "not-the-secret")
		r := e.run(t, "users", "list")
		want := "management: the service refused the client credentials (POST /auth/token: 401 invalid_client: Client authentication failed: invalid or missing Basic credentials): check MANAGEMENT_CLIENT_ID (or --client-id) and MANAGEMENT_CLIENT_SECRET (or --client-secret-stdin)\n"
		if r.code != ExitAuth || r.stderr != want {
			t.Errorf("exit %d, stderr\n%q\nwant %d and\n%q", r.code, r.stderr, ExitAuth, want)
		}
	})
}

// TestNotFound: a User or Thing that does not exist is one line, exit 1.
func TestNotFound(t *testing.T) {
	clearEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"users", "get", "u-x"}, "management: user u-x not found\n"},
		{[]string{"things", "get", "nope"}, "management: thing nope not found\n"},
		{[]string{"things", "get", "two words"}, "management: thing \"two words\" not found\n"},
		{[]string{"things", "update", "nope", "--name", "x"}, "management: thing nope not found\n"},
		{[]string{"users", "associate", "u-x", "lamp-7", "--model", "L-7", "--firmware-version", "1"}, "management: user u-x not found\n"},
		{[]string{"users", "disassociate", "u-grace", "thermo-42"}, "management: Association of Thing thermo-42 with User u-grace was not found\n"},
	} {
		r := runCLI(t, append([]string{"--fake"}, c.args...)...)
		if r.code != ExitFailure || r.stderr != c.want || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", c.args, r.code, r.stdout, r.stderr, ExitFailure, c.want)
		}
	}
}

// TestDisassociate: the association goes, and the tool says so on
// standard error, in a pipe too.
func TestDisassociate(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "lamp-7"}})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}, AssociatedThings: []management.AssociatedThing{{PhysicalID: "lamp-7"}}})
	e := useServer(t, srv)
	r := e.run(t, "users", "disassociate", "u-1", "lamp-7")
	if r.code != ExitOK || r.stdout != "" || r.stderr != "Disassociated Thing lamp-7 from User u-1\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if thing, _ := srv.Thing("lamp-7"); len(thing.AssociatedUsers) != 0 {
		t.Errorf("the Thing is still associated: %+v", thing.AssociatedUsers)
	}
}

// TestTokenCheck: the verdict on stdout, the exit status saying valid or
// not; the token from the environment or standard input.
func TestTokenCheck(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	seedUsers(srv, 1)
	token := srv.IssueEndUserToken(userID(0))

	t.Run("valid from env", func(t *testing.T) {
		e := useServer(t, srv)
		t.Setenv(EnvEndUserToken, token)
		r := e.run(t, "token", "check")
		want := `{"is_token_valid":true,"user_id":"u-00000","user_role":"APPUSER","to_client_response":null}` + "\n"
		if r.code != ExitOK || r.stdout != want {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("valid from stdin after the secret", func(t *testing.T) {
		e := useServer(t, srv)
		t.Setenv(management.EnvClientSecret, "")
		e.stdin = srv.ClientSecret + "\nBearer " + token + "\n"
		r := e.run(t, "--client-secret-stdin", "token", "check", "--token-stdin", "-o", "csv")
		if r.code != ExitOK || r.stdout != "is_token_valid,user_id,user_role,to_client_response\ntrue,u-00000,APPUSER,\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		e := useServer(t, srv)
		t.Setenv(EnvEndUserToken, "eu-forged")
		e.stdoutTTY = true
		r := e.run(t, "token", "check")
		if r.code != ExitFailure || !strings.HasPrefix(r.stdout, "Valid:            no\nAnswer to relay:  401 auth.unauthorized") ||
			r.stderr != "management: the End User token is not valid\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("not <type> <token>", func(t *testing.T) {
		e := useServer(t, srv)
		e.stdin = "Bearer \n"
		r := e.run(t, "token", "check", "--token-stdin")
		want := `management: invalid argument: the End User access token must be "<type> <token>", such as "Bearer eu-123": nothing follows its type` +
			"\nRun 'management token check --help' for usage.\n"
		if r.code != ExitUsage || r.stderr != want || r.stdout != "" {
			t.Errorf("exit %d, stdout %q, stderr\n%q\nwant %d, nothing, and\n%q", r.code, r.stdout, r.stderr, ExitUsage, want)
		}
	})
	t.Run("none", func(t *testing.T) {
		e := useServer(t, srv)
		r := e.run(t, "token", "check")
		if r.code != ExitUsage || !strings.Contains(r.stderr, "no End User token: set "+EnvEndUserToken) {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// TestHelpVersionCompletion: help, version and shell completion succeed
// and print on standard output.
func TestHelpVersionCompletion(t *testing.T) {
	clearEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "Usage:\n  management <command> <subcommand> [flags]"},
		{[]string{"users"}, "Usage:\n  management users <command> [flags]"},
		{[]string{"things", "update", "--help"}, "--unset stringArray"},
		{[]string{"version"}, "\nSDK management-go " + management.Version + "\n"},
		{[]string{"--version"}, "\nSDK management-go " + management.Version + "\n"},
		{[]string{"completion", "bash"}, "# bash completion V2 for management"},
	} {
		r := runCLI(t, c.args...)
		if r.code != ExitOK || !strings.Contains(r.stdout, c.want) || r.stderr != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout lacks %q:\n%s", c.args, r.code, r.stderr, c.want, r.stdout)
		}
	}
}

// TestRefusedArgument: an identifier the SDK refuses before sending
// anything is a usage error, said once with the prefix.
func TestRefusedArgument(t *testing.T) {
	clearEnv(t)
	r := runCLI(t, "--fake", "users", "get", "..")
	want := `management: invalid argument: userID ".." could be resolved as a dot segment` + "\n"
	if r.code != ExitUsage || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, ExitUsage, want)
	}
}
