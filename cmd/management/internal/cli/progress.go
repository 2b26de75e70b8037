package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progress is an export's progress bar: the count, the rate and the time
// elapsed (no total is known before the last page). A nil *progress shows
// nothing: standard error cannot show a bar (IOStreams.CanShowProgress).
type progress struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

// newProgress starts a bar on w, a terminal, counting from done (the items
// of earlier runs); the rate counts this run's only.
func newProgress(ctx context.Context, w io.Writer, plural string, done int64) *progress {
	start := time.Now()
	p := mpb.NewWithContext(ctx, mpb.WithOutput(w), mpb.WithWidth(1), mpb.WithRefreshRate(100*time.Millisecond))
	line := decor.Any(func(s decor.Statistics) string {
		elapsed := time.Since(start)
		rate := float64(s.Current-done) / max(elapsed.Seconds(), 1e-3)
		return progressLine(s.AvailableWidth, elapsed, s.Current, plural, rate)
	})
	// One decorator draws the whole line, spinner included: the library
	// drops a bar that does not fit, and the spaces around it with it.
	bar := p.New(0, mpb.NopStyle(), mpb.PrependDecorators(line))
	bar.SetCurrent(done)
	return &progress{p: p, bar: bar}
}

// spinner is the progress line's spinner, a frame per tenth of a second.
var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// progressLine is the progress line in width columns: "Exporting ⠋ 300
// Users  1491/s  200ms", without the time, then the rate, then the
// spinner when the terminal is too narrow for them.
func progressLine(width int, elapsed time.Duration, count int64, plural string, rate float64) string {
	frame := spinner[int(elapsed/(100*time.Millisecond))%len(spinner)]
	counted := fmt.Sprintf("%d %s", count, plural)
	for _, parts := range [][]string{
		{"Exporting", frame, counted + " ", fmt.Sprintf("%.0f/s ", rate), elapsed.Round(100 * time.Millisecond).String()},
		{"Exporting", frame, counted + " ", fmt.Sprintf("%.0f/s", rate)},
		{"Exporting", frame, counted},
		{"Exporting", counted},
	} {
		if s := strings.Join(parts, " "); width <= 0 || utf8.RuneCountInString(s) <= width {
			return s
		}
	}
	return counted
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
