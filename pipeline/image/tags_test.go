package image

import (
	"slices"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// The tag table of the README, row by row, from the default lock (nginx 1.30.6).
func TestTags(t *testing.T) {
	l := lock.Default()
	full := "1.30.6-openssl3.5.9-pcre2-10.48-zlib1.3.1"
	sha := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name string
		ev   TagEvent
		want []string
	}{
		{"a person's build", TagEvent{}, []string{"1.30.6", full, "1.30"}},
		{"a person's build with --latest", TagEvent{Latest: true}, []string{"1.30.6", full, "1.30", "stable", "latest"}},
		{"a person's build with --revision", TagEvent{Revision: sha}, []string{"1.30.6", full, "1.30", "sha-0123456789ab"}},
		{"main", TagEvent{Ref: mainRef, Revision: sha}, []string{"1.30.6", full, "1.30", "stable", "sha-0123456789ab", "latest"}},
		{"a release tag", TagEvent{Ref: "refs/tags/v1.4.0", Revision: sha}, []string{"1.30.6", full, "1.30", "stable", "sha-0123456789ab", "latest", "v1.4.0"}},
		{"another branch", TagEvent{Ref: "refs/heads/feature", Revision: sha}, []string{"sha-0123456789ab"}},
		{"a pull request", TagEvent{Ref: "refs/pull/7/merge", Revision: sha}, []string{"sha-0123456789ab"}},
		{"a tag that is no release", TagEvent{Ref: "refs/tags/nightly", Revision: sha}, []string{"sha-0123456789ab"}},
	} {
		if got := Tags(l, tc.ev); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Tags = %v, want %v", tc.name, got, tc.want)
		}
	}
	// An odd minor is nginx's mainline.
	c := l.MustComponent(lock.Nginx)
	c.Version = "1.27.3"
	l.SetComponent(c)
	if got := strings.Join(Tags(l, TagEvent{Ref: mainRef}), " "); got != "1.27.3 1.27.3-openssl3.5.9-pcre2-10.48-zlib1.3.1 1.27 mainline latest" {
		t.Errorf("mainline: Tags = %s", got)
	}
}

// A variant's tags carry its suffix (all but the exact stack tag, which names the
// libraries), so the default image and the variant from one commit never share a tag.
func TestVariantTags(t *testing.T) {
	b, _ := lock.BuiltinAt(lock.AWSLCPath)
	l := b.Lock()
	got := strings.Join(Tags(l, TagEvent{Ref: "refs/tags/v1.4.0", Revision: "0123456789abcdef0123456789abcdef01234567"}), " ")
	want := "1.30.6-aws-lc-zlib-ng 1.30.6-aws-lc5.5.0-pcre2-10.48-zlib-ng2.2.2 1.30-aws-lc-zlib-ng stable-aws-lc-zlib-ng sha-0123456789ab-aws-lc-zlib-ng latest-aws-lc-zlib-ng v1.4.0-aws-lc-zlib-ng"
	if got != want {
		t.Errorf("variant tags\n got %s\nwant %s", got, want)
	}
	def := strings.Join(Tags(lock.Default(), TagEvent{Ref: mainRef}), " ")
	if def != "1.30.6 1.30.6-openssl3.5.9-pcre2-10.48-zlib1.3.1 1.30 stable latest" {
		t.Errorf("default tags changed: %s", def)
	}
}
