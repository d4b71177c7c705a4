package upstream

import (
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// The tag of a git-pinned component's new release: the listed one named like the locked tag;
// from nginx.org's list (no tags), the locked tag's name with the version replaced, when it
// names that release.
func TestPickTag(t *testing.T) {
	c := func(name, version, tag string) lock.Component {
		return lock.Component{Name: name, Version: version, Git: &lock.Git{Tag: tag}}
	}
	for _, tc := range []struct {
		name    string
		c       lock.Component
		v       string
		tags    []string
		want    string
		wantErr string
	}{
		{"listed like the locked", c(lock.AWSLC, "5.5.0", "v5.5.0"), "5.6.0", []string{"v5.6.0"}, "v5.6.0", ""},
		{"nginx.org: derived", c(lock.Nginx, "1.30.4", "release-1.30.4"), "1.30.6", nil, "release-1.30.6", ""},
		{"only one listed", c(lock.ZlibNG, "2.2.2", ""), "2.2.4", []string{"2.2.4"}, "2.2.4", ""},
		{"several: the one like the locked", c(lock.ZstdNginxModule, "0.1.0", "0.1.0"), "0.1.1", []string{"v0.1.1", "0.1.1"}, "0.1.1", ""},
		{"several, none like: first by name", c(lock.ZstdNginxModule, "0.1.0", "rel-0.1.0"), "0.1.1", []string{"v0.1.1", "0.1.1"}, "0.1.1", ""},
		{"nginx.org, no locked tag", c(lock.Nginx, "1.30.4", ""), "1.30.6", nil, "", "no tag is known"},
		{"derived tag names no release", c(lock.AWSLC, "5.5.0", "AWS-LC-5.5.0"), "5.6.0", nil, "", "does not name release 5.6.0"},
	} {
		got, err := pickTag(tc.c, tc.v, tc.tags)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: pickTag = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// The unsigned reason follows the pin: the locked tag and version, where whole, become the
// new ones; a reason naming neither is kept as it is.
func TestRewriteReason(t *testing.T) {
	for _, tc := range []struct{ reason, version, tag, newVersion, newTag, want string }{
		{"pinned by the commit of its tag 2.2.2 and that commit's tree", "2.2.2", "2.2.2", "2.2.4", "2.2.4",
			"pinned by the commit of its tag 2.2.4 and that commit's tree"},
		{"the commit of tag v5.5.0", "5.5.0", "v5.5.0", "5.6.0", "v5.6.0", "the commit of tag v5.6.0"},
		{"tarball of 1.30.4 ...; the commit of the release-1.30.4 tag", "1.30.4", "release-1.30.4", "1.30.6", "release-1.30.6",
			"tarball of 1.30.6 ...; the commit of the release-1.30.6 tag"},
		{"upstream publishes no signatures (not 12.2.2 nor 2.2.21)", "2.2.2", "2.2.2", "2.2.4", "2.2.4",
			"upstream publishes no signatures (not 12.2.2 nor 2.2.21)"},
	} {
		old := lock.Component{Version: tc.version, Unsigned: tc.reason, Git: &lock.Git{Tag: tc.tag}}
		if got := rewriteReason(old, ComponentReport{Latest: tc.newVersion, Tag: tc.newTag}); got != tc.want {
			t.Errorf("rewriteReason(%q) = %q, want %q", tc.reason, got, tc.want)
		}
	}
}
