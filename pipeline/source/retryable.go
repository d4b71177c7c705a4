package source

import "fmt"

// Whether running again can help is one rule for the whole repository (pipeline/internal/netfail's Transient:
// a build's downloads and check-updates' lookups alike); the error types of this package
// that know better say so with a Retryable() bool method, which that rule honours.

// stallError is a download that moved less than Floor bytes in the stall time: it stopped,
// or trickles.
type stallError struct {
	After string
	Floor int
	Moved int64 // bytes in the last window
	// Stopped: nothing came for most of the window (a body cut off in mid-transfer), not a
	// trickle spread over it.
	Stopped bool
}

func (e *stallError) Error() string {
	if e.Moved > 0 && e.Stopped {
		return fmt.Sprintf("moved %d bytes in %s and then nothing (the server stopped sending; a download must move %d bytes in the stall time)", e.Moved, e.After, e.Floor)
	}
	if e.Moved > 0 {
		return fmt.Sprintf("moved %d bytes in %s, less than the floor of %d bytes a download must move in the stall time (the server trickles)", e.Moved, e.After, e.Floor)
	}
	return fmt.Sprintf("moved nothing in %s (the server stopped sending; a download must move %d bytes in the stall time)", e.After, e.Floor)
}

// Retryable: a connection that went silent may be a network hiccup, worth another try; a
// server that answers, a trickle at a time, answers the next try the same way, and retrying
// it would multiply the time it holds the build.
func (e *stallError) Retryable() bool { return e.Moved == 0 || e.Stopped }

// Timeout makes it a timeout to netfail.Classify.
func (e *stallError) Timeout() bool { return true }
