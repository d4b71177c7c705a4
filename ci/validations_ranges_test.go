package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 35: numbers outside their range are usage errors (exit 2) naming the flag and the
// valid range, refused before anything is contacted: smoke's ports and uid, build's
// --max-source-size (0 used to mean "the default" silently; a huge value overflowed), and
// build --latest without --push (it moves tags only a push has).
func TestOutOfRangeFlagsRefused(t *testing.T) {
	tree := func() string { return filepath.Join(t.TempDir(), "tree") }
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"smoke", "--address", "127.0.0.1:1", "--http-port", "70000"}, []string{"--http-port 70000", "from 1 to 65535"}},
		{[]string{"smoke", "--address", "127.0.0.1:1", "--https-port", "-1"}, []string{"--https-port -1", "from 1 to 65535"}},
		{[]string{"smoke", "--address", "127.0.0.1:1", "--uid", "-1"}, []string{"--uid -1", "from 1 to 4294967294"}},
		{[]string{"smoke", "--address", "127.0.0.1:1", "--uid", "4294967295"}, []string{"--uid 4294967295"}},
		{[]string{"build", "--engine", "host", "--no-smoke", "--tree", tree(), "--latest"}, []string{"--latest", "add --push"}},
		{[]string{"build", "--engine", "host", "--no-smoke", "--tree", tree(), "--max-source-size", "0"}, []string{`invalid value "0" for flag -max-source-size`, "from 1 to 1048576"}},
		{[]string{"build", "--engine", "host", "--no-smoke", "--tree", tree(), "--max-source-size", "1048577"}, []string{"-max-source-size", "from 1 to 1048576"}},
		{[]string{"build", "--engine", "host", "--no-smoke", "--tree", tree(), "--max-source-size", "9223372036854775807"}, []string{"-max-source-size", "from 1 to 1048576"}},
		{[]string{"pgo-profile", "--engine", "host", "--dir", t.TempDir(), "--max-source-size", "0"}, []string{"-max-source-size", "from 1 to 1048576"}},
	} {
		code, stdout, stderr := runWithin(t, 5*time.Second, c.args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2 (usage)\nstdout: %s\nstderr: %s", c.args, code, stdout, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: stderr lacks %q:\n%s", c.args, w, stderr)
			}
		}
	}
	// The bounds themselves pass build's usage checks.
	for _, v := range []string{"1", "1048576"} {
		var stderr bytes.Buffer
		if code := checkUsage([]string{"build", "--engine", "host", "--no-smoke", "--tree", tree(), "--max-source-size", v}, &stderr); code != 0 {
			t.Errorf("--max-source-size %s: exit %d\n%s", v, code, stderr.String())
		}
	}
}
