package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// printVersion is `ci --version`: what a bug report needs to say which program built an
// image. The module version is set by `go install ...@vX.Y.Z`; a build from a checkout says
// "(devel)" or a pseudo-version, and the commit Go stamped into it (when it could: the line
// says where to look when it did not). The lock line is the lock built into the program: the versions
// a build without --lock gets when pipeline/lock/stack.lock.json is absent.
func printVersion(w io.Writer, bi *debug.BuildInfo, ok bool, l *lock.Lock) {
	version := "unknown (built without module information)"
	var rev, when string
	modified := false
	goVersion := runtime.Version()
	if ok && bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	fmt.Fprintf(w, "nginx-forge %s\n", version)
	switch {
	case rev == "":
		fmt.Fprintln(w, "commit: unknown (this binary carries no VCS stamp: `go build ./ci` in a git clone records one; go run, a git worktree and -buildvcs=false do not)")
	case modified:
		fmt.Fprintf(w, "commit: %s (%s, with uncommitted changes)\n", rev, when)
	default:
		fmt.Fprintf(w, "commit: %s (%s)\n", rev, when)
	}
	fmt.Fprintf(w, "go: %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	var comps []string
	for _, c := range l.Components {
		comps = append(comps, c.Name+" "+c.Version)
	}
	fmt.Fprintf(w, "lock: %s\n", strings.Join(comps, ", "))
	fmt.Fprintf(w, "images: builder %s, runtime %s\n", l.Images.Builder.Pinned(), l.Images.Runtime.Pinned())
}
