package demo

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// narrator prints the demo's story: scene titles, what was done, what was
// seen.
type narrator struct {
	w     io.Writer
	start time.Time
}

func (n *narrator) scene(title string) {
	fmt.Fprintf(n.w, "\n== %s\n", title)
}

// say prints one line of narration, indented under the scene.
func (n *narrator) say(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, l := range strings.Split(msg, "\n") {
		fmt.Fprintf(n.w, "   %s\n", l)
	}
}

// step prints a line with the time since the demo started, for things the
// demo does or waits for.
func (n *narrator) step(format string, args ...any) {
	fmt.Fprintf(n.w, "[%5.1fs] %s\n", time.Since(n.start).Seconds(), fmt.Sprintf(format, args...))
}

// part starts a part of a scene.
func (n *narrator) part(title string) {
	fmt.Fprintf(n.w, "  -- %s\n", title)
}
