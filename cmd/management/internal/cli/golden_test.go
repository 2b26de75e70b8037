package cli

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
)

// TestGolden runs each command against the --fake service, whose data is
// fixed, in each output format, and compares standard output with
// testdata/*.golden (go test -update rewrites them).
func TestGolden(t *testing.T) {
	clearEnv(t)
	commands := []struct {
		name string
		args []string
	}{
		{"users_list", []string{"users", "list"}},
		{"users_list_updated_asc", []string{"users", "list", "--order-by", "updatedAt", "--direction", "asc"}},
		{"users_get", []string{"users", "get", "u-ada"}},
		{"users_get_anonymous", []string{"users", "get", "u-anon-1"}},
		{"things_list", []string{"things", "list"}},
		{"things_get", []string{"things", "get", "thermo-42"}},
		{"things_get_bare", []string{"things", "get", "lamp-7"}},
		{"users_associate", []string{"users", "associate", "u-grace", "cam-9", "--model", "C-9", "--firmware-version", "5.1.0"}},
		{"token_check", []string{"token", "check"}},
	}
	for _, c := range commands {
		for _, f := range allFormats {
			name := c.name + "." + string(f)
			t.Run(name, func(t *testing.T) {
				args := append([]string{"--fake"}, c.args...)
				var r result
				synctest.Test(t, func(t *testing.T) { // fixed clock: associate dates the association now
					r = env{stdoutTTY: f == formatTable}.run(t, append(args, "--output", string(f))...)
				})
				if r.code != ExitOK {
					t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
				}
				golden(t, name, r.stdout)
			})
		}
	}
}

// TestGoldenThingsUpdate updates a Thing with each kind of flag, and
// with a JSON document, in a fixed clock: statuses are dated now.
func TestGoldenThingsUpdate(t *testing.T) {
	clearEnv(t)
	cases := []struct {
		name  string
		args  []string
		stdin string
	}{
		{"things_update_flags", []string{"--name", "Upstairs thermostat", "--firmware-version", "2.5.0", "--last-seen", "now",
			"--status", "battery=low", "--status", "window=open", "--set", "target_celsius=19", "--set", `label="hall"`,
			"--set", `schedule={"mon":[7,22]}`, "--unset", "eco"}, ""},
		{"things_update_json", []string{"--json", "-"},
			`{"name": "Upstairs thermostat", "statuses": [{"name": "battery", "status_value": "low"},
			{"name": "mode", "status_value": "cool", "date": "2026-01-08T10:00:00.000Z"}],
			"custom_settings": {"eco": "$ServiceUnset$", "target_celsius": 19.5}}`},
	}
	for _, c := range cases {
		for _, f := range allFormats {
			name := c.name + "." + string(f)
			t.Run(name, func(t *testing.T) {
				var r result
				synctest.Test(t, func(t *testing.T) {
					args := append([]string{"--fake", "things", "update", "thermo-42", "-o", string(f)}, c.args...)
					r = env{stdoutTTY: f == formatTable, stdin: c.stdin}.run(t, args...)
				})
				if r.code != ExitOK {
					t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
				}
				golden(t, name, r.stdout)
			})
		}
	}
}

// TestDefaultFormat: a table on a terminal, JSON lines in a pipe.
func TestDefaultFormat(t *testing.T) {
	clearEnv(t)
	for _, tty := range []bool{true, false} {
		t.Run(fmt.Sprint("tty=", tty), func(t *testing.T) {
			r := env{stdoutTTY: tty}.run(t, "--fake", "users", "list")
			if r.code != ExitOK {
				t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
			}
			gotTable := strings.HasPrefix(r.stdout, "ID ")
			gotJSONL := strings.HasPrefix(r.stdout, `{"id":`)
			if gotTable != tty || gotJSONL == tty {
				t.Errorf("stdout a terminal: %t; output:\n%s", tty, r.stdout)
			}
		})
	}
}
