package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/errtext"
	"github.com/spf13/cobra"
)

// maxPatchDocument bounds the JSON document of things update --json.
const maxPatchDocument = 1 << 20

// UpdateOptions are the flags and argument of things update, the update
// they make, and what updateRun needs besides: NewCmdUpdate fills them
// from the command line, tests fill them directly.
type UpdateOptions struct {
	IO     *IOStreams
	Client func() (*management.Client, error)
	// Input is standard input, for --json -: buffered once, as the
	// client secret's line may be read from it first.
	Input func() io.Reader

	PhysicalID      string
	Name            string
	FirmwareVersion string
	LastSeen        string
	Statuses        []string // name=value
	Sets            []string // key=JSON
	Unsets          []string // key
	JSONFile        string   // a PATCH document: a file, or "-" for standard input
	Output          string

	// Update is the update the flags or the document describe, set before
	// the run function is called.
	Update management.ThingUpdate
}

// NewCmdUpdate returns things update. runF, when not nil, is called with
// the options in place of updateRun: tests use it to see the update the
// flags make.
func NewCmdUpdate(f *Factory, runF func(*UpdateOptions) error) *cobra.Command {
	opts := &UpdateOptions{IO: f.IO, Client: f.Client, Input: func() io.Reader { return f.input() }}
	cmd := &cobra.Command{
		Use:   "update PHYSICAL_ID",
		Short: "Update a Thing's name, firmware version, last seen time, statuses or custom settings",
		Long: `Update a Thing and show it as updated. Only what is given changes: statuses
merge by name (dated now), custom settings merge by key, and --unset removes a
key. Or give the whole update as a JSON document in the shape of the API's
PATCH body, with --json FILE, or --json - for standard input:

  {"name": "Hall thermostat", "statuses": [{"name": "battery", "status_value": "low"}],
   "custom_settings": {"target_celsius": 19}}`,
		Example: `  management things update thermo-42 --name "Hall thermostat" --firmware-version 2.5.0
  management things update thermo-42 --status battery=low --set target_celsius=19 --set 'label="hall"' --unset eco
  echo '{"custom_settings": {"eco": false}}' | management things update thermo-42 --json -`,
		Args: exactArgs("PHYSICAL_ID"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			opts.PhysicalID = args[0]
			u, err := opts.build(cmd, time.Now())
			if err != nil {
				return err
			}
			opts.Update = u
			if runF != nil {
				return runF(opts)
			}
			return updateRun(cmd.Context(), opts)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Name, "name", "", "the new name")
	fl.StringVar(&opts.FirmwareVersion, "firmware-version", "", "the new firmware version")
	fl.StringVar(&opts.LastSeen, "last-seen", "", `when the Thing was last seen: "now" or an RFC 3339 time`)
	fl.StringArrayVar(&opts.Statuses, "status", nil, "set a status, dated now: name=value (repeatable)")
	fl.StringArrayVar(&opts.Sets, "set", nil, `set a custom setting to a JSON value: key=JSON, e.g. n=3, on=true, label='"hall"' (repeatable)`)
	fl.StringArrayVar(&opts.Unsets, "unset", nil, "remove a custom setting (repeatable)")
	fl.StringVar(&opts.JSONFile, "json", "", `the update as a JSON document in the API's PATCH shape: a file, or "-" for standard input`)
	addOutputFlag(cmd, &opts.Output, allFormats...)
	addJQFlag(cmd, f.IO, &opts.Output)
	return cmd
}

func updateRun(ctx context.Context, opts *UpdateOptions) error {
	out, client, err := prepare(opts.IO, opts.Client, opts.Output)
	if err != nil {
		return err
	}
	thing, err := client.Things.Update(ctx, opts.PhysicalID, opts.Update)
	if err != nil {
		return notFound("thing", opts.PhysicalID, err)
	}
	return printOne(opts.IO.OutFor(out), out, thing, thingDetailsColumns, viewThing)
}

// build returns the update the flags describe, or the --json document's.
func (o *UpdateOptions) build(cmd *cobra.Command, now time.Time) (management.ThingUpdate, error) {
	fl := cmd.Flags()
	flagsGiven := fl.Changed("name") || fl.Changed("firmware-version") || fl.Changed("last-seen") ||
		len(o.Statuses) > 0 || len(o.Sets) > 0 || len(o.Unsets) > 0
	if o.JSONFile != "" {
		if flagsGiven {
			return management.ThingUpdate{}, usagef("--json cannot be combined with the other update flags")
		}
		return o.readDocument(now)
	}
	if !flagsGiven {
		return management.ThingUpdate{}, usagef("nothing to update: give --name, --firmware-version, --last-seen, --status, --set, --unset or --json")
	}
	var u management.ThingUpdate
	if fl.Changed("name") {
		u.Name = &o.Name
	}
	if fl.Changed("firmware-version") {
		u.FirmwareVersion = &o.FirmwareVersion
	}
	if fl.Changed("last-seen") {
		t, err := parseTime("--last-seen", o.LastSeen, now)
		if err != nil {
			return u, err
		}
		u.LastSeen = &t
	}
	statuses, err := parseStatuses(o.Statuses, now)
	if err != nil {
		return u, err
	}
	u.Statuses = statuses
	settings, err := parseSettings(o.Sets, o.Unsets)
	if err != nil {
		return u, err
	}
	u.CustomSettings = settings
	return u, nil
}

func parseTime(flag, s string, now time.Time) (management.Timestamp, error) {
	if s == "now" {
		return management.NewTimestamp(now), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return management.Timestamp{}, usagef(`%s %q: want "now" or an RFC 3339 time such as 2026-01-05T09:00:00Z`, flag, s)
	}
	return management.NewTimestamp(t), nil
}

// parseStatuses reads the --status name=value flags, dated now.
func parseStatuses(flags []string, now time.Time) ([]management.ThingStatus, error) {
	var statuses []management.ThingStatus
	seen := make(map[string]bool)
	for _, s := range flags {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, usagef("--status %q: want name=value", s)
		}
		if seen[name] {
			return nil, usagef("--status %s is given twice", name)
		}
		seen[name] = true
		statuses = append(statuses, management.ThingStatus{Name: name, StatusValue: value, Date: management.NewTimestamp(now)})
	}
	return statuses, nil
}

// parseSettings reads the --set key=JSON and --unset key flags.
func parseSettings(sets, unsets []string) (map[string]any, error) {
	if len(sets)+len(unsets) == 0 {
		return nil, nil
	}
	settings := make(map[string]any, len(sets)+len(unsets))
	for _, s := range sets {
		key, raw, ok := strings.Cut(s, "=")
		if !ok || key == "" {
			return nil, usagef("--set %q: want key=JSON", s)
		}
		if _, dup := settings[key]; dup {
			return nil, usagef("custom setting %s is given twice", key)
		}
		v, err := decodeValue(raw)
		if err != nil {
			return nil, usagef(`--set %s: the value is not JSON (a string is quoted: %s='"text"')`, key, key)
		}
		settings[key] = v
	}
	for _, key := range unsets {
		if key == "" {
			return nil, usagef("--unset: the key is empty")
		}
		if _, dup := settings[key]; dup {
			return nil, usagef("custom setting %s is given twice", key)
		}
		settings[key] = management.Unset
	}
	return settings, nil
}

// decodeValue decodes one JSON value, numbers kept as json.Number so that
// no digit is lost on the way to the service.
func decodeValue(raw string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// patchDocument is the API's PATCH body, as --json reads it.
type patchDocument struct {
	Name            *string               `json:"name"`
	FirmwareVersion *string               `json:"firmware_version"`
	LastSeen        *management.Timestamp `json:"last_seen"`
	Statuses        []patchStatus         `json:"statuses"`
	CustomSettings  map[string]any        `json:"custom_settings"`
}

type patchStatus struct {
	Name        string                `json:"name"`
	StatusValue string                `json:"status_value"`
	Date        *management.Timestamp `json:"date"` // absent: now
}

// readDocument reads the --json document, from a file or standard input.
func (o *UpdateOptions) readDocument(now time.Time) (management.ThingUpdate, error) {
	var r io.Reader
	if o.JSONFile == "-" {
		r = o.Input()
	} else {
		file, err := os.Open(o.JSONFile)
		if err != nil {
			return management.ThingUpdate{}, usagef("--json: %w", err)
		}
		defer file.Close()
		r = file
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPatchDocument+1))
	if err != nil {
		return management.ThingUpdate{}, errtext.Errorf("--json: %w", err)
	}
	if len(data) > maxPatchDocument {
		return management.ThingUpdate{}, usagef("--json: the document is larger than %d bytes", maxPatchDocument)
	}
	return parseDocument(data, now, unsetMarker())
}

// unsetMarker is the custom settings value that, in a PATCH document,
// removes a key: the SDK's Config.UnsetMarker as the environment sets it,
// or its default.
func unsetMarker() string {
	if m := strings.TrimSpace(os.Getenv(management.EnvUnsetMarker)); m != "" {
		return m
	}
	return "$ServiceUnset$"
}

// parseDocument decodes a PATCH document strictly: an unknown key is a
// mistake worth telling rather than an update silently not made. As on the
// wire, a custom setting whose value is the unset marker removes the key:
// it becomes management.Unset (the SDK sends no marker string otherwise).
func parseDocument(data []byte, now time.Time, marker string) (management.ThingUpdate, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var doc patchDocument
	if err := dec.Decode(&doc); err != nil {
		return management.ThingUpdate{}, usagef("--json: not a PATCH document: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return management.ThingUpdate{}, usagef("--json: more than one JSON value")
	}
	u := management.ThingUpdate{Name: doc.Name, FirmwareVersion: doc.FirmwareVersion, LastSeen: doc.LastSeen, CustomSettings: doc.CustomSettings}
	for key, v := range u.CustomSettings {
		if v == marker {
			u.CustomSettings[key] = management.Unset
		}
	}
	seen := make(map[string]bool)
	for _, s := range doc.Statuses {
		if s.Name == "" || seen[s.Name] {
			return u, usagef("--json: every status needs a name, given once")
		}
		seen[s.Name] = true
		date := management.NewTimestamp(now)
		if s.Date != nil {
			date = *s.Date
		}
		u.Statuses = append(u.Statuses, management.ThingStatus{Name: s.Name, StatusValue: s.StatusValue, Date: date})
	}
	if u.Name == nil && u.FirmwareVersion == nil && u.LastSeen == nil && len(u.Statuses) == 0 && len(u.CustomSettings) == 0 {
		return u, usagef("--json: the document updates nothing")
	}
	return u, nil
}
