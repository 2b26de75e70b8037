package management

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPageDecodeErrorsAsBefore: a page is decoded from a pooled buffer
// with json.Unmarshal (pageBody), but an answer that does not decode fails
// with the error the json.Decoder path gives every other answer, and its
// DecodeError keeps the start of the body.
func TestPageDecodeErrorsAsBefore(t *testing.T) {
	bodies := []string{
		"",
		"   \n",
		"<html>ok</html>",
		`{"users":[{"id":"u-1"}],"next_page":null} {"users":[]}`,
		`{"users":[{"id":"u-1"}],"next_page":null} x`,
		`{"users":[{"id":"u-1","email":`,
		`{"users":[{"id":"u-1","created_at":"yesterday"}],"next_page":null}`,
		`{"users":[{"id":""}],"next_page":null}`,
		`{"users":"u-1","next_page":null}`,
		"null",
	}
	for _, body := range bodies {
		t.Run(fmt.Sprintf("%.30q", body), func(t *testing.T) {
			want := decodeJSON(strings.NewReader(body), new(usersPage))
			if want == nil {
				t.Fatalf("the Decoder path accepts %q", body)
			}
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", rawResponder(http.StatusOK, "application/json", body))
			_, err := c.Users.ListPage(context.Background(), nil)
			de := asDecodeError(t, err)
			if de.Err.Error() != want.Error() {
				t.Errorf("Err = %q, want %q", de.Err, want)
			}
			if string(de.Body) != body[:min(len(body), maxDecodeErrorBody)] {
				t.Errorf("Body = %q, want the body's start", de.Body)
			}
		})
	}
}

// TestPageBufferNotShared: the buffer a page was read into is reused for
// the next one; what the first page decoded to must not change.
func TestPageBufferNotShared(t *testing.T) {
	c, mt := setup(t)
	page := func(id, email string) string {
		return fmt.Sprintf(`{"users":[{"id":%q,"email":%q,"created_at":"2024-03-18T09:21:45.123Z"}],"next_page":null}`, id, email)
	}
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", rawResponder(http.StatusOK, "application/json", page("u-1", "one@example.com")))
	first, err := c.Users.ListPage(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := *first.Items[0]
	want.Email = Ptr(*want.Email)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", rawResponder(http.StatusOK, "application/json", page("u-2", "two@example.com")))
	for range 3 {
		if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want, *first.Items[0]); diff != "" || want.ID != "u-1" {
		t.Errorf("the first page's User changed (-before +after):\n%s", diff)
	}
}
