package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/itchyny/gojq"
	"github.com/serviceconnect/management/internal/errtext"
	"github.com/spf13/cobra"
)

// jqFilter is a compiled --jq expression. It is compiled before any
// request, so that a mistake in it is a usage error that costs nothing.
type jqFilter struct {
	code *gojq.Code
}

// compileJQ parses and compiles expr, jq's language as gojq implements it.
func compileJQ(expr string) (*jqFilter, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, usagef("--jq %s: %v", printable(expr), err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, usagef("--jq %s: %v", printable(expr), err)
	}
	return &jqFilter{code: code}, nil
}

// run applies the filter to the JSON document doc and writes each result
// on a line of w: a string as it is (as gh and jq -r do), anything else
// as JSON, indented for a terminal. On a terminal a string goes through
// visible, like a table cell: it came from the service.
func (q *jqFilter) run(ctx context.Context, w io.Writer, doc []byte, terminal bool) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // numbers as the service wrote them: no float64 rounding
	var v any
	if err := dec.Decode(&v); err != nil {
		return errtext.Errorf("--jq: the output to filter is not JSON: %w", err)
	}
	iter := q.code.RunWithContext(ctx, v)
	for {
		r, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, ok := r.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil { // halt: stop, no error
				return nil
			}
			return errtext.Errorf("--jq: %s", escapeControls(err.Error()))
		}
		if err := writeJQResult(w, r, terminal); err != nil {
			return err
		}
	}
}

func writeJQResult(w io.Writer, r any, terminal bool) error {
	if s, ok := r.(string); ok {
		if terminal {
			s = visible(s)
		}
		_, err := fmt.Fprintln(w, s)
		return err
	}
	var b []byte
	var err error
	if terminal {
		b, err = json.MarshalIndent(r, "", "  ")
		b = []byte(jsonEscapeControls(string(b)))
	} else {
		b, err = json.Marshal(r)
	}
	if err != nil {
		return errtext.Errorf("--jq: a result cannot be written as JSON: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// addJQFlag adds --jq (-q) to cmd, whose output format is *output on
// streams: the command then writes JSON into a buffer, and the filter's
// results go to standard output instead. The whole output is held in
// memory until the filter runs: export, whose output can be larger than
// memory, has no --jq (pipe its JSON lines to jq instead).
func addJQFlag(cmd *cobra.Command, streams *IOStreams, output *string) {
	var expr string
	cmd.Flags().StringVarP(&expr, "jq", "q", "", "filter the JSON output with a jq expression (implies -o json)")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if !c.Flags().Changed("jq") {
			return run(c, args)
		}
		if *output != "" && *output != string(formatJSON) {
			return classify(usagef("--jq filters JSON: it cannot be combined with -o %s", *output))
		}
		q, err := compileJQ(expr)
		if err != nil {
			return classify(err)
		}
		*output = string(formatJSON)
		out := streams.Out
		var doc bytes.Buffer
		streams.Out = &doc
		err = run(c, args)
		streams.Out = out
		if doc.Len() > 0 { // token check prints an invalid verdict, then fails
			if ferr := q.run(c.Context(), out, doc.Bytes(), streams.IsStdoutTTY()); ferr != nil && err == nil {
				return classify(ferr)
			}
		}
		return err
	}
}

// jsonEscapeControls is the JSON text s, whose control characters below
// U+0020 encoding/json already escapes, with the other runes a terminal
// must not receive raw (DEL, the C1 controls, format characters such as
// a right-to-left override) written as \uXXXX escapes too: the same JSON
// value, safe to show.
func jsonEscapeControls(s string) string {
	if printableText(strings.NewReplacer("\n", "", "\t", "").Replace(s)) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t' || strconv.IsPrint(r):
			b.WriteRune(r)
		case r > 0xffff: // a surrogate pair, as JSON writes runes beyond the BMP
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
