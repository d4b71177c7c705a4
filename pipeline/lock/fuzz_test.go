package lock

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// FuzzParse: the lock parser never panics, and a lock it accepts is one the strict rules
// accept again after it is written out (Marshal), byte for byte the same the second time:
// one input, one verdict, whichever command reads or rewrites it. The seed corpus is in
// testdata/fuzz/FuzzParse (hostile locks of issue 29) and the two real locks.
func FuzzParse(f *testing.F) {
	for _, file := range []string{testLockFile, "stack.lock.json"} {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Parse(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		out, err := l.Marshal()
		if err != nil {
			t.Fatalf("Marshal of an accepted lock: %v", err)
		}
		l2, err := Parse(out)
		if err != nil {
			t.Fatalf("the written form of an accepted lock is refused: %v\n%s", err, out)
		}
		out2, err := l2.Marshal()
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("writing is not stable (%v):\n%s\n---\n%s", err, out, out2)
		}
		for _, c := range l.Components {
			for _, s := range []string{c.URL, c.Version} {
				if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
					t.Fatalf("accepted %q, which holds white space, a control or non-ASCII character", s)
				}
			}
		}
		for _, im := range []Image{l.Images.Builder, l.Images.Runtime} {
			if strings.ContainsAny(im.Ref, " \t\r\n") || (strings.Contains(im.Ref, "@") && !strings.Contains(im.Ref, "@sha256:")) {
				t.Fatalf("accepted the image reference %q", im.Ref)
			}
		}
	})
}
