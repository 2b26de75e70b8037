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
	p := mpb.NewWithContext(ctx, mpb.WithOutput(w), mpb.WithWidth(1), mpb.WithRefreshRate(100*time.Millisecond))
	stats := decor.Any(func(s decor.Statistics) string {
		elapsed := time.Since(start)
		rate := float64(s.Current-done) / max(elapsed.Seconds(), 1e-3)
		return fmt.Sprintf("%d %s  %.0f/s  %s", s.Current, plural, rate, elapsed.Round(100*time.Millisecond))
	})
	bar := p.New(0, mpb.SpinnerStyle(),
		mpb.PrependDecorators(decor.Name("Exporting")),
		mpb.AppendDecorators(stats),
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
