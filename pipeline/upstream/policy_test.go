package upstream

import (
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

func vlist(t *testing.T, s string) []version {
	t.Helper()
	var out []version
	for _, f := range strings.Fields(s) {
		v, err := parseVersion(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestSelect(t *testing.T) {
	// The release lists of the recorded GitHub responses (testdata/github).
	nginx := "0.1.0 1.24.0 1.25.5 1.26.0 1.26.1 1.26.2 1.26.3 1.27.0 1.27.5 1.28.0 1.29.0 1.29.1"
	openssl := "3.0.17 3.0.18 3.2.6 3.3.5 3.4.3 3.5.2 3.5.3 3.5.4 3.6.0"
	today := day("2026-12-02")
	for _, tc := range []struct {
		name                  string
		component, track      string
		current, releases     string
		now                   time.Time
		wantTrack, wantTarget string
		wantEOL               string
		wantWarn              string // substring of the warnings ("" = no warnings)
		wantErr               string
	}{
		{name: "nginx pinned branch superseded", component: lock.Nginx, track: "1.26", current: "1.26.2", releases: nginx,
			wantTrack: "1.26", wantTarget: "1.26.3", wantEOL: "superseded by 1.28", wantWarn: `nginx 1.26 is no longer maintained: 1.28 superseded it`},
		{name: "nginx current stable branch", component: lock.Nginx, track: "1.28", current: "1.28.0", releases: nginx,
			wantTrack: "1.28", wantTarget: "1.28.0"},
		{name: "nginx stable follows the newest even branch", component: lock.Nginx, track: "stable", current: "1.26.2", releases: nginx,
			wantTrack: "stable", wantTarget: "1.28.0"},
		{name: "nginx empty track stays on the branch", component: lock.Nginx, track: "", current: "1.26.2", releases: nginx,
			wantTrack: "1.26", wantTarget: "1.26.3", wantEOL: "superseded by 1.28", wantWarn: "superseded"},
		{name: "nginx latest is mainline", component: lock.Nginx, track: "latest", current: "1.26.2", releases: nginx,
			wantTrack: "latest", wantTarget: "1.29.1"},
		{name: "nginx old mainline superseded by newer mainline", component: lock.Nginx, track: "1.27", current: "1.27.0", releases: nginx,
			wantTrack: "1.27", wantTarget: "1.27.5", wantEOL: "superseded by 1.29", wantWarn: "1.29 superseded it"},
		{name: "nginx unknown branch", component: lock.Nginx, track: "1.30", current: "1.28.0", releases: nginx,
			wantErr: `track "1.30" matches no upstream release`},
		{name: "lts is for OpenSSL only", component: lock.Nginx, track: "lts", current: "1.26.2", releases: nginx,
			wantErr: "only for OpenSSL"},

		{name: "openssl LTS branch", component: lock.OpenSSL, track: "3.5", current: "3.5.2", releases: openssl,
			wantTrack: "3.5", wantTarget: "3.5.4", wantEOL: "2030-04-08 (LTS)"},
		{name: "openssl 3.3 ended", component: lock.OpenSSL, track: "3.3", current: "3.3.1", releases: openssl,
			wantTrack: "3.3", wantTarget: "3.3.5", wantEOL: "ended 2026-04-09",
			wantWarn: `OpenSSL 3.3 reached end of life on 2026-04-09 and gets no more security fixes: set the lock's openssl track to "3.5" (LTS until 2030-04-08)`},
		{name: "openssl 3.0 LTS ended", component: lock.OpenSSL, track: "3.0", current: "3.0.17", releases: openssl,
			wantTrack: "3.0", wantTarget: "3.0.18", wantEOL: "ended 2026-09-07", wantWarn: "reached end of life on 2026-09-07"},
		{name: "openssl 3.0 ending soon", component: lock.OpenSSL, track: "3.0", current: "3.0.17", releases: openssl, now: day("2026-07-01"),
			wantTrack: "3.0", wantTarget: "3.0.18", wantEOL: "2026-09-07", wantWarn: "reaches end of life on 2026-09-07 (in 68 days)"},
		{name: "openssl 3.3 before its end", component: lock.OpenSSL, track: "3.3", current: "3.3.1", releases: openssl, now: day("2025-06-01"),
			wantTrack: "3.3", wantTarget: "3.3.5", wantEOL: "2026-04-09"},
		{name: "openssl lts", component: lock.OpenSSL, track: "lts", current: "3.0.17", releases: openssl,
			wantTrack: "lts", wantTarget: "3.5.4", wantEOL: "2030-04-08 (LTS)"},
		{name: "openssl latest past its end", component: lock.OpenSSL, track: "latest", current: "3.5.4", releases: openssl,
			wantTrack: "latest", wantTarget: "3.6.0", wantEOL: "ended 2026-11-01", wantWarn: "OpenSSL 3.6 reached end of life"},
		{name: "openssl unknown branch has no EOL", component: lock.OpenSSL, track: "4.0", current: "4.0.0", releases: openssl + " 4.0.0",
			wantTrack: "4.0", wantTarget: "4.0.0"},
		{name: "stable is for nginx only", component: lock.OpenSSL, track: "stable", current: "3.5.4", releases: openssl,
			wantErr: "only for nginx"},
		{name: "openssl empty track stays on the branch", component: lock.OpenSSL, track: "", current: "3.5.2", releases: openssl,
			wantTrack: "3.5", wantTarget: "3.5.4", wantEOL: "2030-04-08 (LTS)"},

		{name: "pcre2 latest", component: lock.PCRE2, track: "latest", current: "10.44", releases: "10.10 10.43 10.44 10.45 10.46",
			wantTrack: "latest", wantTarget: "10.46"},
		{name: "zlib empty track is latest", component: lock.Zlib, track: "", current: "1.3.1", releases: "1.2.13 1.3 1.3.1",
			wantTrack: "latest", wantTarget: "1.3.1"},
		// The optional components: "latest" by default, or a branch; nginx's and OpenSSL's
		// tracks are refused.
		{name: "brotli empty track is latest", component: lock.Brotli, track: "", current: "1.1.0", releases: "1.0.7 1.0.9 1.1.0 1.2.0",
			wantTrack: "latest", wantTarget: "1.2.0"},
		{name: "zstd pinned branch", component: lock.Zstd, track: "1.5", current: "1.5.6", releases: "1.5.6 1.5.7 1.6.0",
			wantTrack: "1.5", wantTarget: "1.5.7"},
		{name: "stable is for nginx only (zstd)", component: lock.Zstd, track: "stable", current: "1.5.7", releases: "1.5.7",
			wantErr: "only for nginx"},
		{name: "ngx_brotli on its release candidate, nothing newer", component: lock.NgxBrotli, track: "latest", current: "1.0.0rc", releases: "1.0.0rc",
			wantTrack: "latest", wantTarget: "1.0.0rc"},
		{name: "ngx_brotli release candidate to the release", component: lock.NgxBrotli, track: "latest", current: "1.0.0rc", releases: "1.0.0rc 1.0.0",
			wantTrack: "latest", wantTarget: "1.0.0"},
		{name: "zstd-nginx-module latest", component: lock.ZstdNginxModule, track: "", current: "0.1.0", releases: "0.1.0 0.1.1",
			wantTrack: "latest", wantTarget: "0.1.1"},
		{name: "bad track", component: lock.Zlib, track: "newest", current: "1.3.1", releases: "1.3.1",
			wantErr: `track "newest" is not`},
		{name: "no releases", component: lock.Zlib, track: "latest", current: "1.3.1", releases: "",
			wantErr: "lists no releases"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := today
			if !tc.now.IsZero() {
				now = tc.now
			}
			cur, err := parseVersion(tc.current)
			if err != nil {
				t.Fatal(err)
			}
			s, err := selectRelease(tc.component, tc.track, cur, vlist(t, tc.releases), now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Track != tc.wantTrack || s.Target.String() != tc.wantTarget || s.EOL != tc.wantEOL {
				t.Errorf("got track %q target %s EOL %q; want %q %s %q", s.Track, s.Target, s.EOL, tc.wantTrack, tc.wantTarget, tc.wantEOL)
			}
			warn := strings.Join(s.Warnings, "\n")
			if tc.wantWarn == "" && warn != "" {
				t.Errorf("unexpected warnings: %s", warn)
			}
			if tc.wantWarn != "" && !strings.Contains(warn, tc.wantWarn) {
				t.Errorf("warnings %q do not contain %q", warn, tc.wantWarn)
			}
		})
	}
}

// The table's dates are the ones the project relies on; a typo here would silence a warning.
func TestOpenSSLSupportTable(t *testing.T) {
	for branch, want := range map[string]string{"3.0": "2026-09-07", "3.3": "2026-04-09", "3.5": "2030-04-08"} {
		if got := openSSLSupport[branch].End.Format(time.DateOnly); got != want {
			t.Errorf("OpenSSL %s ends %s, want %s", branch, got, want)
		}
	}
	for branch, s := range openSSLSupport {
		if s.LTS != (branch == "3.0" || branch == "3.5" || strings.HasPrefix(branch, "1.1")) {
			t.Errorf("OpenSSL %s: LTS = %v", branch, s.LTS)
		}
	}
}
