package cli

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/serviceconnect/management"
	"github.com/spf13/cobra"
)

// format is an output format.
type format string

// The output formats. The default is table when standard output is a
// terminal, jsonl otherwise.
const (
	formatTable format = "table" // aligned columns, for people
	formatJSON  format = "json"  // an indented JSON array (or object, for one item)
	formatJSONL format = "jsonl" // one JSON object per line
	formatCSV   format = "csv"   // a header row, then one row per item
)

var allFormats = []format{formatTable, formatJSON, formatJSONL, formatCSV}

// addOutputFlag adds --output (-o) to cmd, storing into *f.
func addOutputFlag(cmd *cobra.Command, f *string, formats ...format) {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	cmd.Flags().StringVarP(f, "output", "o", "", "output format: "+strings.Join(names, ", ")+" (default: table on a terminal, jsonl otherwise)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp))
}

// chooseFormat resolves --output: the value given, if it is one of
// allowed, or the default for the terminal (table) or a pipe (jsonl).
func chooseFormat(flag string, stdoutTTY bool, allowed ...format) (format, error) {
	if flag == "" {
		if stdoutTTY && slices.Contains(allowed, formatTable) {
			return formatTable, nil
		}
		return formatJSONL, nil
	}
	if !slices.Contains(allowed, format(flag)) {
		names := make([]string, len(allowed))
		for i, f := range allowed {
			names[i] = string(f)
		}
		return "", usagef("--output %q: want one of %s", flag, strings.Join(names, ", "))
	}
	return format(flag), nil
}

// column is one field of T: its wire name (the CSV header), its table
// title, and its value, with ok false for null (an empty CSV cell, "-" in
// a table). The value is a string in JSON, unless raw: then it is JSON
// itself (a boolean, a list, an object).
type column[T any] struct {
	name  string
	title string
	value func(*T) (s string, ok bool)
	raw   bool
}

// textColumn is a column whose value is a JSON string (or null).
func textColumn[T any](name, title string, value func(*T) (string, bool)) column[T] {
	return column[T]{name: name, title: title, value: value}
}

// rawColumn is a column whose value is JSON itself.
func rawColumn[T any](name, title string, value func(*T) (string, bool)) column[T] {
	return column[T]{name: name, title: title, value: value, raw: true}
}

// within returns the columns of an embedded T as columns of U.
func within[T, U any](cols []column[T], get func(*U) *T) []column[U] {
	out := make([]column[U], len(cols))
	for i, c := range cols {
		out[i] = column[U]{name: c.name, title: c.title, value: func(u *U) (string, bool) { return c.value(get(u)) }, raw: c.raw}
	}
	return out
}

func text(s string) (string, bool) { return s, true }

func nullable(s *string) (string, bool) {
	if s == nil {
		return "", false
	}
	return *s, true
}

func timestamp(t *management.Timestamp) (string, bool) {
	if t == nil {
		return "", false
	}
	return t.String(), true
}

// jsonCell is v as compact JSON: custom settings, consents and other
// nested values take one CSV column each. nil maps and slices are null.
func jsonCell[V any](v V) (string, bool) {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return "", false
	}
	return string(b), true
}

var userColumns = []column[management.User]{
	textColumn("id", "ID", func(u *management.User) (string, bool) { return text(u.ID) }),
	textColumn("email", "EMAIL", func(u *management.User) (string, bool) { return nullable(u.Email) }),
	textColumn("first_name", "FIRST NAME", func(u *management.User) (string, bool) { return nullable(u.FirstName) }),
	textColumn("last_name", "LAST NAME", func(u *management.User) (string, bool) { return nullable(u.LastName) }),
	textColumn("created_at", "CREATED", func(u *management.User) (string, bool) { return timestamp(&u.CreatedAt) }),
	textColumn("updated_at", "UPDATED", func(u *management.User) (string, bool) { return timestamp(&u.UpdatedAt) }),
}

var userDetailsColumns = append(within(userColumns, func(u *management.UserDetails) *management.User { return &u.User }),
	[]column[management.UserDetails]{
		rawColumn("is_anonymous", "ANONYMOUS", func(u *management.UserDetails) (string, bool) { return fmt.Sprint(u.IsAnonymous), true }),
		textColumn("terms_of_use_version_approved", "TERMS OF USE", func(u *management.UserDetails) (string, bool) { return nullable(u.TermsOfUseVersionApproved) }),
		textColumn("email_verification_status", "EMAIL STATUS", func(u *management.UserDetails) (string, bool) { return text(string(u.EmailVerificationStatus)) }),
		rawColumn("consents", "CONSENTS", func(u *management.UserDetails) (string, bool) { return jsonCell(u.Consents) }),
		rawColumn("custom_settings", "CUSTOM SETTINGS", func(u *management.UserDetails) (string, bool) { return jsonCell(u.CustomSettings) }),
		rawColumn("associated_things", "ASSOCIATED THINGS", func(u *management.UserDetails) (string, bool) { return jsonCell(u.AssociatedThings) }),
	}...)

var thingColumns = []column[management.Thing]{
	textColumn("physical_id", "PHYSICAL ID", func(t *management.Thing) (string, bool) { return text(t.PhysicalID) }),
	textColumn("name", "NAME", func(t *management.Thing) (string, bool) { return text(t.Name) }),
	textColumn("model", "MODEL", func(t *management.Thing) (string, bool) { return text(t.Model) }),
	textColumn("firmware_version", "FIRMWARE", func(t *management.Thing) (string, bool) { return text(t.FirmwareVersion) }),
	textColumn("last_seen", "LAST SEEN", func(t *management.Thing) (string, bool) { return timestamp(t.LastSeen) }),
	textColumn("created_at", "CREATED", func(t *management.Thing) (string, bool) { return timestamp(&t.CreatedAt) }),
	textColumn("updated_at", "UPDATED", func(t *management.Thing) (string, bool) { return timestamp(&t.UpdatedAt) }),
}

var thingDetailsColumns = append(within(thingColumns, func(t *management.ThingDetails) *management.Thing { return &t.Thing }),
	[]column[management.ThingDetails]{
		rawColumn("statuses", "STATUSES", func(t *management.ThingDetails) (string, bool) { return jsonCell(t.Statuses) }),
		rawColumn("custom_settings", "CUSTOM SETTINGS", func(t *management.ThingDetails) (string, bool) { return jsonCell(t.CustomSettings) }),
		rawColumn("associated_users", "ASSOCIATED USERS", func(t *management.ThingDetails) (string, bool) { return jsonCell(t.AssociatedUsers) }),
	}...)

// countingWriter counts the bytes written through it: an export records
// the output's length in its checkpoint.
type countingWriter struct {
	w io.Writer
	n int64
}

// Write writes p and counts it.
func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// itemWriter writes a stream of items in one format, page by page, in
// memory bounded by a page: list and export use it.
type itemWriter[T any] struct {
	format  format
	cols    []column[T]
	out     *countingWriter
	buf     *bufio.Writer
	csv     *csv.Writer       // formatCSV
	tab     *tabwriter.Writer // formatTable
	written int64             // items written so far, earlier runs' included
	flat    bool              // appendFlat can encode the items
	line    []byte            // reused for each JSON line
	row     []string          // reused for each CSV row
	pending int               // table rows not yet aligned and written
}

// tableBlock is how many rows a table aligns at once: the columns of a
// long listing line up within blocks this long, in bounded memory.
const tableBlock = 500

// newItemWriter returns a writer to w of items in format f, of which
// written were already written (by an earlier run of an export).
func newItemWriter[T any](w io.Writer, f format, cols []column[T], written int64) *itemWriter[T] {
	out := &countingWriter{w: w}
	iw := &itemWriter[T]{format: f, cols: cols, out: out, buf: bufio.NewWriterSize(out, 64<<10), written: written, flat: flat(cols)}
	switch f {
	case formatCSV:
		iw.csv = csv.NewWriter(iw.buf)
		iw.row = make([]string, len(cols))
	case formatTable:
		iw.tab = newTable(iw.buf)
	}
	return iw
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// header starts the stream: the CSV header row, the table's titles, or
// the JSON array's opening bracket.
func (iw *itemWriter[T]) header() error {
	switch iw.format {
	case formatCSV:
		for i, c := range iw.cols {
			iw.row[i] = c.name
		}
		return iw.csv.Write(iw.row)
	case formatTable:
		for i, c := range iw.cols {
			if i > 0 {
				iw.tab.Write([]byte{'\t'})
			}
			io.WriteString(iw.tab, c.title)
		}
		_, err := iw.tab.Write([]byte{'\n'})
		return err
	case formatJSON:
		_, err := iw.buf.WriteString("[")
		return err
	}
	return nil
}

// write adds one item.
func (iw *itemWriter[T]) write(item *T) error {
	iw.written++
	switch iw.format {
	case formatCSV:
		for i, c := range iw.cols {
			iw.row[i], _ = c.value(item)
		}
		return iw.csv.Write(iw.row)
	case formatTable:
		iw.pending++
		for i, c := range iw.cols {
			if i > 0 {
				iw.tab.Write([]byte{'\t'})
			}
			s, ok := c.value(item)
			io.WriteString(iw.tab, tableCell(s, ok))
		}
		_, err := iw.tab.Write([]byte{'\n'})
		return err
	case formatJSON:
		sep := ",\n  "
		if iw.written == 1 {
			sep = "\n  "
		}
		b, err := json.MarshalIndent(item, "  ", "  ")
		if err != nil {
			return err
		}
		iw.buf.WriteString(sep)
		_, err = iw.buf.Write(b)
		return err
	default:
		if iw.flat {
			iw.line = append(appendFlat(iw.line[:0], iw.cols, item), '\n')
			_, err := iw.buf.Write(iw.line)
			return err
		}
		b, err := json.Marshal(item)
		if err != nil {
			return err
		}
		iw.buf.Write(b)
		return iw.buf.WriteByte('\n')
	}
}

// tableCell is a value as a table shows it: "-" for null, else visible:
// on one line, and with no control character from the data reaching the
// terminal raw.
func tableCell(s string, ok bool) string {
	if !ok {
		return "-"
	}
	return visible(s)
}

// flush writes out what is buffered, at the end of a page: the output's
// length is then Len.
func (iw *itemWriter[T]) flush() error {
	if iw.csv != nil {
		iw.csv.Flush()
		if err := iw.csv.Error(); err != nil {
			return err
		}
	}
	if iw.tab != nil && iw.pending >= tableBlock {
		iw.pending = 0
		if err := iw.tab.Flush(); err != nil {
			return err
		}
	}
	return iw.buf.Flush()
}

// footer ends the stream (the JSON array's closing bracket) and flushes.
func (iw *itemWriter[T]) footer() error {
	if iw.format == formatJSON {
		if iw.written == 0 {
			iw.buf.WriteString("]\n")
		} else {
			iw.buf.WriteString("\n]\n")
		}
	}
	if iw.tab != nil {
		iw.pending = tableBlock // align and write what is left
	}
	return iw.flush()
}

// Len is the number of bytes written to the underlying writer since the
// itemWriter was made.
func (iw *itemWriter[T]) Len() int64 { return iw.out.n }

// printOne writes a single item in format f: a key-value view (table), an
// indented JSON object, one JSON line, or a CSV header and row.
func printOne[T any](w io.Writer, f format, item *T, cols []column[T], view func(io.Writer, *T) error) error {
	switch f {
	case formatTable:
		return view(w, item)
	case formatJSON:
		b, err := json.MarshalIndent(item, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	iw := newItemWriter(w, f, cols, 0)
	if f == formatCSV {
		if err := iw.header(); err != nil {
			return err
		}
	}
	if err := iw.write(item); err != nil {
		return err
	}
	return iw.flush()
}
