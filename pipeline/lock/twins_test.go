package lock

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// How a twin's component may differ from the shipped lock's.
const (
	// twinBytes: the twin pins other bytes (another release, a repack, a git tree), because
	// the shipped lock's bytes are not reachable from this machine.
	twinBytes = "bytes"
	// twinSignature: the same URL and SHA-256, without the signature, because the signature
	// file is not reachable here; nothing else may differ.
	twinSignature = "signature"
	// twinOnly: a component the twin has and the shipped lock does not (an optional module's
	// source, so the modules' tests build from the same lock).
	twinOnly = "twin only"
)

// twinBuilderUnpinned: the shipped lock pins its builder in time (images.builder.digest and
// .snapshot) and the twin pins neither; the images are otherwise the same.
const twinBuilderUnpinned = "builder unpinned"

// builderTimePins is the row of differ (not a component's name) for the builder's pins in time.
const builderTimePins = "images.builder digest and snapshot"

// builderTimePinsWhy is why no twin pins its builder in time.
const builderTimePinsWhy = "the real ubuntu:24.04 image and Ubuntu's archive snapshots are unreachable here: the Dagger lab's builder is a Debian stand-in served under the lock's tag, whose apt has no snapshot of Ubuntu's archive, and the lab's engine cache is keyed on the builder reference and setup script as written for an unpinned lock"

// twinDifference is one component in which a twin may differ from its shipped lock, and why.
type twinDifference struct{ kind, why string }

// shippedTwins are the shipped locks, each with the test twin that .ci/test builds in its
// place (every end-to-end build, smoke test and reproducibility test of the shipped stack),
// and the components in which they may differ: only those whose upstream bytes (or signature)
// no Debian source package that .ci/fetch-sources reads serves here. Everything else (the
// other components, source_date_epoch, the images, the profiles) must be identical, so a
// build of the twin is a build of the shipped lock where the two agree. When the mirror
// serves a listed file, pin it in the twin and drop its row here.
var shippedTwins = []struct {
	shipped, twin string
	differ        map[string]twinDifference
}{
	{DefaultPath, "testdata/stack.twin.lock.json", map[string]twinDifference{
		builderTimePins: {twinBuilderUnpinned, builderTimePinsWhy},
		Zlib:            {twinBytes, "zlib's own zlib-1.3.1.tar.gz is in no Debian source: Debian repacks it (1.3.dfsg+really1.3.1), whose bytes the twin pins"},
		PCRE2:           {twinSignature, "Debian forky's pcre2_10.48.orig.tar.gz is the pinned tarball, but no Debian source carries PCRE2's .sig"},
		OpenSSL:         {twinBytes, "openssl_3.5.9.orig.tar.gz and its .asc are in Debian trixie's source index, but the mirror here answers 404 for them; the twin pins 3.5.7 (signed, the newest 3.5 release served)"},
		Nginx:           {twinBytes, "nginx_1.30.6.orig.tar.gz and its .asc are in Debian forky's source index, but the mirror here answers 404 for them; the twin pins the git tree of release-1.30.4 (../shared/upstream)"},
		Brotli:          {twinOnly, "an optional module's source, for the brotli tests"},
		NgxBrotli:       {twinOnly, "an optional module's source, for the brotli tests"},
		Zstd:            {twinOnly, "an optional module's source, for the zstd tests"},
	}},
	{AWSLCPath, "testdata/aws-lc.twin.lock.json", map[string]twinDifference{
		builderTimePins: {twinBuilderUnpinned, builderTimePinsWhy},
		ZlibNG:          {twinBytes, "../shared/upstream's archive of tag 2.2.2 applies zlib-ng's export-ignore rules, so its tree is a subset of the commit's"},
		AWSLC:           {twinBytes, "../shared/upstream's archive of tag v5.5.0 lacks 12 large test-data files, so its tree is a subset of the commit's"},
		PCRE2:           {twinSignature, "Debian forky's pcre2_10.48.orig.tar.gz is the pinned tarball, but no Debian source carries PCRE2's .sig"},
		Nginx:           {twinBytes, "nginx_1.30.6.orig.tar.gz and its .asc are in Debian forky's source index, but the mirror here answers 404 for them; the twin pins the git tree of release-1.30.4 (../shared/upstream)"},
	}},
}

// twinViolations says where twin departs from shipped beyond what differ allows, and which
// rows of differ no longer describe a difference (a row that outlives its reason hides the
// next real one).
func twinViolations(shipped, twin *Lock, differ map[string]twinDifference) []string {
	var out []string
	if shipped.SourceDateEpoch != twin.SourceDateEpoch {
		out = append(out, fmt.Sprintf("source_date_epoch: shipped %d, twin %d", shipped.SourceDateEpoch, twin.SourceDateEpoch))
	}
	shippedImages := shipped.Images
	if d, ok := differ[builderTimePins]; ok && d.kind == twinBuilderUnpinned {
		switch b := shippedImages.Builder; {
		case b.Digest == "" && b.Snapshot == "":
			out = append(out, builderTimePins+": listed as differing but the shipped lock pins neither: drop its row")
		case twin.Images.Builder.Digest != "" || twin.Images.Builder.Snapshot != "":
			out = append(out, builderTimePins+": the twin pins its builder in time, which the lab cannot build: leave the twin's builder without digest and snapshot")
		}
		shippedImages.Builder.Digest, shippedImages.Builder.Snapshot = "", ""
	}
	if !reflect.DeepEqual(shippedImages, twin.Images) {
		out = append(out, fmt.Sprintf("images: shipped %+v, twin %+v", shipped.Images, twin.Images))
	}
	if !reflect.DeepEqual(shipped.Profiles, twin.Profiles) && len(twin.Profiles) > 0 {
		// A twin records no profile of its own unless it is the shipped one's: a profile is
		// keyed by the sources it was trained on, which differ where the locks do.
		out = append(out, "profiles: the twin records profiles that are not the shipped lock's")
	}
	names := map[string]bool{}
	for _, c := range append(slices.Clone(shipped.Components), twin.Components...) {
		names[c.Name] = true
	}
	differ = maps.Clone(differ)
	delete(differ, builderTimePins)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	}) {
		s, inShipped := shipped.Component(name)
		w, inTwin := twin.Component(name)
		d, listed := differ[name]
		switch {
		case !inTwin:
			out = append(out, fmt.Sprintf("%s: in the shipped lock, not in the twin", name))
		case !inShipped:
			if !listed || d.kind != twinOnly {
				out = append(out, fmt.Sprintf("%s: in the twin only, and not listed as %q", name, twinOnly))
			}
		case reflect.DeepEqual(s, w):
			if listed {
				out = append(out, fmt.Sprintf("%s: listed as differing (%s) but identical: drop its row", name, d.kind))
			}
		case !listed:
			out = append(out, fmt.Sprintf("%s: differs (shipped %s %s, twin %s %s) and is not listed with a reason", name, s.Version, s.Pin(), w.Version, w.Pin()))
		case d.kind == twinSignature:
			bare := s
			bare.Signature, bare.Unsigned = nil, w.Unsigned
			if !reflect.DeepEqual(bare, w) || w.Unsigned == "" || s.Signature == nil {
				out = append(out, fmt.Sprintf("%s: may differ only by the signature (the twin saying why in \"unsigned\"), but differs otherwise", name))
			}
		case d.kind != twinBytes:
			out = append(out, fmt.Sprintf("%s: listed as %q but in both locks", name, d.kind))
		}
	}
	return out
}

// TestShippedLocksAndTheirTwins holds each shipped lock and its test twin to the same pins
// except where listed, and prints the list: what .ci/test does not build of the shipped lock.
func TestShippedLocksAndTheirTwins(t *testing.T) {
	for _, st := range shippedTwins {
		b, ok := BuiltinAt(st.shipped)
		if !ok {
			t.Fatalf("no built-in lock at %s", st.shipped)
		}
		twin, err := Load(st.twin)
		if err != nil {
			t.Fatal(err)
		}
		shipped := b.Lock()
		if v := twinViolations(shipped, twin, st.differ); len(v) > 0 {
			t.Errorf("%s and its twin %s:\n  %s", st.shipped, st.twin, strings.Join(v, "\n  "))
		}
		var rows []string
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for n := range st.differ {
				if !yield(n) {
					return
				}
			}
		}) {
			rows = append(rows, fmt.Sprintf("%s (%s): %s", name, st.differ[name].kind, st.differ[name].why))
		}
		t.Logf("%s is built in tests as %s, which differs in:\n  %s", st.shipped, filepath.Base(st.twin), strings.Join(rows, "\n  "))
	}
}

// TestTwinViolationsCatchPlantedDifferences shows the rule failing on each kind of drift.
func TestTwinViolationsCatchPlantedDifferences(t *testing.T) {
	st := shippedTwins[0]
	b, _ := BuiltinAt(st.shipped)
	load := func() *Lock {
		l, err := Load(st.twin)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	set := func(l *Lock, name string, edit func(c *Component)) {
		for i := range l.Components {
			if l.Components[i].Name == name {
				edit(&l.Components[i])
			}
		}
	}
	for _, tc := range []struct {
		name string
		edit func(l *Lock)
		want string
	}{
		{"another epoch", func(l *Lock) { l.SourceDateEpoch++ }, "source_date_epoch"},
		{"another runtime", func(l *Lock) { l.Images.Runtime.Ref += "x" }, "images"},
		{"a builder pinned in time in the twin", func(l *Lock) { l.Images.Builder = b.Lock().Images.Builder }, "the twin pins its builder in time"},
		{"another builder tag", func(l *Lock) { l.Images.Builder.Ref += "x" }, "images"},
		{"signature-only row with other bytes", func(l *Lock) { set(l, PCRE2, func(c *Component) { c.SHA256 = strings.Repeat("a", 64) }) }, "pcre2: may differ only by the signature"},
		{"signature-only row without a reason", func(l *Lock) { set(l, PCRE2, func(c *Component) { c.Unsigned = "" }) }, "pcre2: may differ only by the signature"},
		{"a shipped component missing", func(l *Lock) {
			l.Components = slices.DeleteFunc(l.Components, func(c Component) bool { return c.Name == OpenSSL })
		}, "openssl: in the shipped lock, not in the twin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			twin := load()
			tc.edit(twin)
			v := strings.Join(twinViolations(b.Lock(), twin, st.differ), "\n")
			if !strings.Contains(v, tc.want) {
				t.Errorf("violations %q, want one with %q", v, tc.want)
			}
		})
	}
	t.Run("an unlisted difference", func(t *testing.T) {
		differ := map[string]twinDifference{}
		for k, v := range st.differ {
			differ[k] = v
		}
		delete(differ, Zlib)
		if v := strings.Join(twinViolations(b.Lock(), load(), differ), "\n"); !strings.Contains(v, "zlib: differs") {
			t.Errorf("violations %q, want zlib's difference named", v)
		}
	})
	t.Run("a builder row that outlived its reason", func(t *testing.T) {
		shipped := b.Lock()
		shipped.Images.Builder.Digest, shipped.Images.Builder.Snapshot = "", ""
		if v := strings.Join(twinViolations(shipped, load(), st.differ), "\n"); !strings.Contains(v, "pins neither: drop its row") {
			t.Errorf("violations %q, want the stale builder row named", v)
		}
	})
	t.Run("a row that outlived its reason", func(t *testing.T) {
		twin := load()
		s, _ := b.Lock().Component(PCRE2)
		set(twin, PCRE2, func(c *Component) { *c = s })
		if v := strings.Join(twinViolations(b.Lock(), twin, st.differ), "\n"); !strings.Contains(v, "pcre2: listed as differing") {
			t.Errorf("violations %q, want the stale pcre2 row named", v)
		}
	})
}
