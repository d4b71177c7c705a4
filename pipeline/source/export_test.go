package source

// Options the external tests (package source_test) set and the program does not: a short
// retry wait, a short stall timeout, a clock.
var (
	WithBackoff = withBackoff
	WithNow     = withNow
)
