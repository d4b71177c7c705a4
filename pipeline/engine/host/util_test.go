package host_test

import (
	"fmt"
	"runtime"
)

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

func hostArch() string { return runtime.GOARCH }
