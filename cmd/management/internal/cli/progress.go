package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progress is an export's progress bar: the count, the rate and the time
// elapsed (no total is known before the last page). A nil *progress shows
// nothing: standard error is not a terminal.
type progress struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

// newProgress starts a bar on w, a terminal, counting from done (the items
// of earlier runs); the rate counts this run's only.
func newProgress(ctx context.Context, w io.Writer, plural string, done int64) *progress {
	start := time.Now()
	p := mpb.NewWithContext(ctx, mpb.WithOutput(w), mpb.WithWidth(12), mpb.WithRefreshRate(100*time.Millisecond))
	rate := decor.Any(func(s decor.Statistics) string {
		secs := time.Since(start).Seconds()
		if secs <= 0 {
			return "0/s"
		}
		return fmt.Sprintf("%.0f/s", float64(s.Current-done)/secs)
	}, decor.WCSyncSpace)
	bar := p.New(0, mpb.SpinnerStyle(),
		mpb.PrependDecorators(decor.Name("Exporting "+plural), decor.CurrentNoUnit("%d", decor.WCSyncSpace)),
		mpb.AppendDecorators(rate, decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)),
	)
	bar.SetCurrent(done)
	return &progress{p: p, bar: bar}
}

// add counts n more items.
func (pr *progress) add(n int) {
	if pr != nil {
		pr.bar.IncrBy(n)
	}
}

// stop ends the bar, complete or not, and waits until it is drawn.
func (pr *progress) stop(complete bool) {
	if pr == nil {
		return
	}
	if complete {
		pr.bar.SetTotal(-1, true)
	} else {
		pr.bar.Abort(false)
	}
	pr.p.Wait()
}
