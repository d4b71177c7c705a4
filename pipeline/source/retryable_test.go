package source

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
)

// This package's own error types under the one rule (netfail.Transient, whose table is in
// its package): what each says about itself.
func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"a stalled body", fmt.Errorf("GET x: %w", &stallError{After: "1m"}), true},
		{"a body cut off after a few bytes", fmt.Errorf("GET x: %w", &stallError{After: "1m", Floor: 1024, Moved: 444, Stopped: true}), true},
		{"a trickle", fmt.Errorf("GET x: %w", &stallError{After: "1m", Floor: 1024, Moved: 60}), false},
		{"a size limit", &SizeError{URL: "x", Limit: 1, Size: -1}, false},
		{"a checksum", &ChecksumError{File: "f", URL: "x", Want: "a", Got: "b"}, false},
		{"marked permanent", permanent(&netfail.HTTPStatusError{What: "GET x", Code: 503}), false},
		{"git: timed out", &gitError{op: "fetch", err: errors.New("exit status 128"), stderr: "fatal: unable to access 'https://x/': Failed to connect to x port 443: Connection timed out"}, true},
		{"git: no such commit", &gitError{op: "fetch", err: errors.New("exit status 128"), stderr: "fatal: remote error: upload-pack: not our ref 0123"}, false},
	} {
		if got := netfail.Transient(c.err); got != c.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
	if f := netfail.Classify(fmt.Errorf("GET x: %w", &stallError{After: "1m"})); f.Kind != netfail.Timeout {
		t.Errorf("a stalled body is classified %s, want a timeout", f.Kind)
	}
}
