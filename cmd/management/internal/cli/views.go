package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/serviceconnect/management"
)

// The table views of single items: the fields one per line, then the
// nested lists as small tables.

// field writes one "Title:\tvalue" line of a key-value view.
func field(w io.Writer, title string, value string, ok bool) {
	fmt.Fprintf(w, "%s:\t%s\n", title, tableCell(value, ok))
}

// fieldOf is field for a value and its presence, as the column helpers return them.
func fieldOf(w io.Writer, title string) func(string, bool) {
	return func(value string, ok bool) { field(w, title, value, ok) }
}

// viewColumns writes the key-value lines of cols, titles in sentence case.
func viewColumns[T any](w io.Writer, item *T, cols []column[T], titles []string) {
	for i, c := range cols {
		s, ok := c.value(item)
		field(w, titles[i], s, ok)
	}
}

var userTitles = []string{"ID", "Email", "First name", "Last name", "Created", "Updated"}

func viewUser(w io.Writer, u *management.UserDetails) error {
	tw := newTable(w)
	viewColumns(tw, &u.User, userColumns, userTitles)
	field(tw, "Anonymous", fmt.Sprint(u.IsAnonymous), true)
	fieldOf(tw, "Terms of use")(nullable(u.TermsOfUseVersionApproved))
	field(tw, "Email status", string(u.EmailVerificationStatus), true)
	fieldOf(tw, "Custom settings")(jsonCell(u.CustomSettings))
	if err := tw.Flush(); err != nil {
		return err
	}
	section(w, "Consents", len(u.Consents), []string{"KEY", "VALUE", "UPDATED"}, func(row func(...string)) {
		for _, c := range u.Consents {
			row(c.Key, string(c.Value), c.UpdatedAt.String())
		}
	})
	section(w, "Associated Things", len(u.AssociatedThings), []string{"PHYSICAL ID", "NAME", "MODEL", "FIRMWARE", "LAST SEEN", "ASSOCIATED"}, func(row func(...string)) {
		for _, t := range u.AssociatedThings {
			s, ok := timestamp(t.LastSeenAt)
			row(t.PhysicalID, t.Name, t.Model, t.FirmwareVersion, tableCell(s, ok), t.AssociationData.AssociatedAt.String())
		}
	})
	return nil
}

var thingTitles = []string{"Physical ID", "Name", "Model", "Firmware version", "Last seen", "Created", "Updated"}

func viewThing(w io.Writer, t *management.ThingDetails) error {
	tw := newTable(w)
	viewColumns(tw, &t.Thing, thingColumns, thingTitles)
	fieldOf(tw, "Custom settings")(jsonCell(t.CustomSettings))
	if err := tw.Flush(); err != nil {
		return err
	}
	section(w, "Statuses", len(t.Statuses), []string{"NAME", "VALUE", "DATE"}, func(row func(...string)) {
		for _, s := range t.Statuses {
			row(s.Name, s.StatusValue, s.Date.String())
		}
	})
	section(w, "Associated Users", len(t.AssociatedUsers), []string{"ID", "ASSOCIATED"}, func(row func(...string)) {
		for _, u := range t.AssociatedUsers {
			row(u.ID, u.AssociationData.AssociatedAt.String())
		}
	})
	return nil
}

// section writes a titled table of n rows, or the title and "none".
func section(w io.Writer, title string, n int, headers []string, rows func(row func(...string))) {
	if n == 0 {
		fmt.Fprintf(w, "\n%s: none\n", title)
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(cells ...string) {
		fmt.Fprint(tw, "  ")
		for i, c := range cells {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, tableCell(c, true))
		}
		fmt.Fprintln(tw)
	}
	row(headers...)
	rows(row)
	tw.Flush()
}
