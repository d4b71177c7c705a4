package upstream

import (
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// FuzzVersionOrder: parseVersion accepts exactly what the lock accepts (lock.CheckVersion),
// a parsed version prints back as itself, and Compare is an order: antisymmetric, and equal
// versions compare equal to every third version alike. Seeds: testdata/fuzz/FuzzVersionOrder.
func FuzzVersionOrder(f *testing.F) {
	for _, s := range [][3]string{
		{"1.26.3", "1.26.10", "1.28.0"},
		{"1.0.0rc", "1.0.0", "1.0.0rc2"},
		{"1.3", "1.3.0", "1.3.0.0"},
		{"01.26.2", "1.26.2", "1.2.3rc0"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		var vs []version
		for _, s := range []string{a, b, c} {
			v, err := parseVersion(s)
			if (err == nil) != (lock.CheckVersion(s) == nil) {
				t.Fatalf("%q: ParseVersion says %v, lock.CheckVersion says %v: two verdicts", s, err, lock.CheckVersion(s))
			}
			if err != nil {
				return
			}
			if v.String() != s {
				t.Fatalf("ParseVersion(%q).String() = %q", s, v.String())
			}
			vs = append(vs, v)
		}
		x, y, z := vs[0], vs[1], vs[2]
		if x.Compare(y) != -y.Compare(x) {
			t.Fatalf("Compare is not antisymmetric: %s %s", x, y)
		}
		if x.Compare(x) != 0 {
			t.Fatalf("%s != itself", x)
		}
		if x.Compare(y) == 0 && x.Compare(z) != y.Compare(z) {
			t.Fatalf("%s == %s, but they compare differently with %s", x, y, z)
		}
		if x.Compare(y) <= 0 && y.Compare(z) <= 0 && x.Compare(z) > 0 {
			t.Fatalf("not transitive: %s <= %s <= %s but %s > %s", x, y, z, x, z)
		}
	})
}
