package upstream_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

func TestBranchWarnings(t *testing.T) {
	at := func(s string) time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// The seed lock: the design card's stack (nginx 1.26.2 on "stable", OpenSSL 3.3.1 on "lts").
	seed, err := lock.Load("../lock/seed.lock.json")
	if err != nil {
		t.Fatal(err)
	}
	with := func(nginx, nginxTrack, openssl, opensslTrack string) *lock.Lock {
		l := lock.Default()
		n := l.MustComponent(lock.Nginx)
		n.Version, n.Track = nginx, nginxTrack
		l.SetComponent(n)
		o := l.MustComponent(lock.OpenSSL)
		o.Version, o.Track = openssl, opensslTrack
		l.SetComponent(o)
		return l
	}
	for _, tc := range []struct {
		name string
		l    *lock.Lock
		now  time.Time
		want []string // one substring per expected warning, in order
	}{
		{"the seed lock: stable and lts tracks lead off both branches", seed, at("2026-12-02"), []string{
			"nginx 1.26.2 is on the 1.26 branch, superseded by 1.28 on 2025-04-23 and no longer maintained (no security fixes): run `go run ./ci check-updates --write` (the lock's nginx track, \"stable\", moves it)",
			"OpenSSL 3.3.1 is on the 3.3 branch, which reached end of life on 2026-04-09 (no security fixes): run `go run ./ci check-updates --write` (the lock's openssl track, \"lts\", moves it)",
		}},
		{"branch tracks: set the track first", with("1.26.2", "1.26", "3.3.1", "3.3"), at("2026-12-02"), []string{
			`set nginx's "track" in the lock to "stable" (or "1.28"), then run`,
			`set openssl's "track" in the lock to "lts", then run`,
		}},
		{"empty tracks stay on the branch: set the track first", with("1.26.2", "", "3.3.1", ""), at("2026-12-02"), []string{
			`set nginx's "track" in the lock to "stable"`, `set openssl's "track" in the lock to "lts"`,
		}},
		{"the shipped lock is on supported branches", lock.Default(), at("2026-12-07"), nil},
		{"1.28 once 1.30 is out", with("1.28.0", "stable", "3.5.4", "lts"), at("2026-12-02"), []string{"nginx 1.28.0 is on the 1.28 branch, superseded by 1.30 on 2026-04-14"}},
		{"supported branches before 1.30", with("1.28.0", "stable", "3.5.4", "lts"), at("2026-04-13"), nil},
		{"before 1.28 and before 3.3's end", seed, at("2025-04-22"), nil},
		{"the day 1.28 came out", seed, at("2025-04-23"), []string{"superseded by 1.28 on 2025-04-23"}},
		{"old mainline superseded by the stable branch made from it", with("1.27.4", "latest", "3.5.4", "lts"), at("2026-12-02"), []string{
			"nginx 1.27.4 is on the 1.27 branch, superseded by 1.28 on 2025-04-23",
		}},
		{"a branch newer than the table is taken as current", with("1.32.0", "stable", "3.7.0", "latest"), at("2027-12-02"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := upstream.BranchWarnings(tc.l, tc.now)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings = %q; want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d = %q; want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
