//go:build linux

package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// reporter writes the single updating progress line and the log lines. When
// both go to the same writer, a log line first clears the progress line and
// the progress line is redrawn on the next update.
type reporter struct {
	mu       sync.Mutex
	progress io.Writer
	log      io.Writer
	width    int // length of the progress line on screen
}

// status replaces the progress line with text.
func (r *reporter) status(format string, args ...any) {
	if r.progress == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	text := fmt.Sprintf(format, args...)
	pad := max(r.width-len(text), 0)
	fmt.Fprint(r.progress, "\r"+text+strings.Repeat(" ", pad))
	r.width = len(text)
}

// clear removes the progress line.
func (r *reporter) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLocked()
}

func (r *reporter) clearLocked() {
	if r.progress == nil || r.width == 0 {
		return
	}
	fmt.Fprint(r.progress, "\r"+strings.Repeat(" ", r.width)+"\r")
	r.width = 0
}

// logf writes a permanent line.
func (r *reporter) logf(format string, args ...any) {
	if r.log == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == r.progress {
		r.clearLocked()
	}
	fmt.Fprintf(r.log, format+"\n", args...)
}
