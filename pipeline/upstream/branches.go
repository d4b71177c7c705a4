package upstream

import (
	"fmt"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// nginxStableReleases are the dates nginx released each stable branch's first version
// (nginx.org/en/CHANGES-X.Y). nginx maintains one stable branch at a time: a stable branch
// X.Y is superseded the day X.(Y+2).0 comes out, and the mainline branch X.(Y-1) that became
// it the same day. BranchWarnings reads this table because it has no release list; a branch
// newer than the last entry is taken as current. Add a row when nginx releases a new stable
// branch (check-updates already warns from the live release list before that).
var nginxStableReleases = map[string]time.Time{
	"1.20": day("2021-04-20"),
	"1.22": day("2022-05-24"),
	"1.24": day("2023-04-11"),
	"1.26": day("2024-04-23"),
	"1.28": day("2025-04-23"),
	"1.30": day("2026-04-14"),
}

// BranchWarnings says, for each component of l whose locked version is on a branch that is
// superseded (nginx) or past its end of life (OpenSSL) at now, what is wrong and how to fix
// it: `go run ./ci check-updates --write` when the lock's track already leads off the
// branch, otherwise the track to set first. It reads only l, now and the tables in this
// package (no network), so `build --push` can call it before building; the build goes on.
func BranchWarnings(l *lock.Lock, now time.Time) []string {
	var out []string
	const update = "`go run ./ci check-updates --write`"
	if c, ok := l.Component(lock.Nginx); ok {
		if v, err := parseVersion(c.Version); err == nil && len(v) >= 2 {
			branch := v.Branch()
			// The stable branch that replaces this one: the next even minor for a stable
			// branch, the one right after for a mainline (odd) branch.
			next := v[1] + 2
			if v[1]%2 == 1 {
				next = v[1] + 1
			}
			succ := fmt.Sprintf("%d.%d", v[0], next)
			if on, known := nginxStableReleases[succ]; known && !now.Before(on) {
				fix := "run " + update + " (the lock's nginx track, " + quoteTrack(c.Track) + ", moves it)"
				if !leavesBranch(c.Track, branch) {
					fix = fmt.Sprintf("set nginx's \"track\" in the lock to %q (or %q), then run %s", trackStable, succ, update)
				}
				out = append(out, fmt.Sprintf("nginx %s is on the %s branch, superseded by %s on %s and no longer maintained (no security fixes): %s",
					c.Version, branch, succ, on.Format(time.DateOnly), fix))
			}
		}
	}
	if c, ok := l.Component(lock.OpenSSL); ok {
		if v, err := parseVersion(c.Version); err == nil && len(v) >= 2 {
			branch := v.Branch()
			if sup, known := openSSLSupport[branch]; known && !now.Before(sup.End) {
				fix := "run " + update + " (the lock's openssl track, " + quoteTrack(c.Track) + ", moves it)"
				if !leavesBranch(c.Track, branch) {
					fix = fmt.Sprintf("set openssl's \"track\" in the lock to %q, then run %s", trackLTS, update)
				}
				out = append(out, fmt.Sprintf("OpenSSL %s is on the %s branch, which reached end of life on %s (no security fixes): %s",
					c.Version, branch, sup.End.Format(time.DateOnly), fix))
			}
		}
	}
	return out
}

// leavesBranch reports whether a check-updates run on track can move a component off branch:
// a moving track (stable, lts, latest) or another pinned branch can; the branch itself or an
// empty track (which stays on the current branch, see defaultTrack) cannot.
func leavesBranch(track, branch string) bool {
	return track != "" && track != branch
}

func quoteTrack(t string) string {
	if t == "" {
		return "none"
	}
	return fmt.Sprintf("%q", t)
}
