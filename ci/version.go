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
// "(devel)" and the commit Go stamped into it (go build does; go run does not, so the line
// then says where to look). The lock line is the lock built into the program: the versions
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
		fmt.Fprintln(w, "commit: unknown (not stamped: `go run` and builds outside a git checkout do not record one; `go build ./ci` does)")
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
