package managementtest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/serviceconnect/management"
)

// The fidelity check's report: what CheckFidelity returns, its Markdown
// table, and how the check adds to it.

// A Difference is one way the fake answered otherwise than the service,
// for requests of one endpoint.
type Difference struct {
	// Interactions are the numbers, from 1, of the cassette's interactions
	// where the fake answered so.
	Interactions []int
	// Request is the endpoint: a Route ("GET /users/{user_id}"), so that
	// no id shows.
	Request string
	// Aspect is what differs: "status", "error shape", "reason", "verdict"
	// (is_token_valid), "field <path>" ("field users[].email"), "next_page"
	// or "Retry-After".
	Aspect string
	// Service and Fake say what each answered: a status, a shape, a
	// reason, "present" or "absent", "a link" or "null".
	Service, Fake string
}

// A FidelityReport is what CheckFidelity found.
type FidelityReport struct {
	// Cassette names the cassette's file ("cassette" when it was not read
	// from one).
	Cassette string
	// Compared is the number of answers compared.
	Compared int
	// Differences are where the fake answered otherwise, in the order of
	// the interactions where each was first seen.
	Differences []Difference
	// NotCompared says which interactions could not be compared, and why.
	NotCompared []string
}

// String is the report as a short Markdown table, to paste into an issue:
// it shows statuses, shapes, reasons and field names, never a value.
func (r *FidelityReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "managementtest fidelity (management-go %s): %d answers of %s compared, %d differences.\n",
		management.Version, r.Compared, r.Cassette, len(r.Differences))
	if len(r.Differences) > 0 {
		b.WriteString("\n| # | request | what | service | fake |\n|---|---|---|---|---|\n")
		for _, d := range r.Differences {
			nums := make([]string, len(d.Interactions))
			for i, n := range d.Interactions {
				nums[i] = strconv.Itoa(n)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", strings.Join(nums, ", "), cell(d.Request), cell(d.Aspect), cell(d.Service), cell(d.Fake))
		}
	}
	if len(r.NotCompared) > 0 {
		b.WriteString("\nNot compared:\n")
		for _, n := range r.NotCompared {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}

// cell is s as a table cell: no bar, no line break, at most 80 bytes.
func cell(s string) string {
	s = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// differ reports a difference, or adds n to the same one reported before.
func (ck *check) differ(n int, request, aspect, service, fake string) {
	key := request + "\x00" + aspect + "\x00" + service + "\x00" + fake
	if i, ok := ck.seen[key]; ok {
		d := &ck.report.Differences[i]
		if d.Interactions[len(d.Interactions)-1] != n { // once per interaction, however many items
			d.Interactions = append(d.Interactions, n)
		}
		return
	}
	ck.seen[key] = len(ck.report.Differences)
	ck.report.Differences = append(ck.report.Differences, Difference{Interactions: []int{n}, Request: request, Aspect: aspect, Service: service, Fake: fake})
}

func (ck *check) notCompared(why string) {
	ck.report.NotCompared = append(ck.report.NotCompared, why)
}
