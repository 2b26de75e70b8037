package managementtest

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// An answer too large for a cassette reaches the SDK whole, is recorded
// cut, and Close says so (with a bound of 1 KiB, not the 32 MiB of
// maxRecordedBody, so that the test is quick).
func TestRecorderTooLargeAnswer(t *testing.T) {
	srv := NewInMemoryServer()
	big := strings.Repeat("x", 1<<10+1)
	srv.FailNextWith(RouteGetThing, 1, Response{Status: http.StatusBadGateway, Body: big})
	path := filepath.Join(t.TempDir(), "c.json")
	rec, err := NewRecorder(path, srv.URL, RecordOptions{AllowedBaseURLs: []string{srv.URL}, Transport: srv.Transport()})
	if err != nil {
		t.Fatal(err)
	}
	rec.maxBody = 1 << 10
	req, _ := http.NewRequest(http.MethodGet, srv.URL+DefaultPathPrefix+"/things/t-1", nil)
	resp, err := rec.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(got) != len(big) {
		t.Errorf("the answer came with %d bytes, %v; want %d", len(got), err, len(big))
	}
	if err := rec.Close(); err == nil || !strings.Contains(err.Error(), "larger than 1024 bytes") {
		t.Errorf("Close = %v; want it to say an answer was too large", err)
	}
	c, err := LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Interactions[0].Response; !r.Cut || len(r.Body) != 1<<10 {
		t.Errorf("the answer is recorded with %d bytes, cut %t; want the first 1 KiB, cut", len(r.Body), r.Cut)
	}
}
