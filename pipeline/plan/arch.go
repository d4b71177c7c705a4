package plan

import "runtime"

// hostArch is the architecture "native" refers to.
func hostArch() string { return runtime.GOARCH }
