package source

// Whether running again can help is one rule for the whole repository (pipeline/internal/netfail's Transient:
// a build's downloads and check-updates' lookups alike); the error types of this package
// that know better say so with a Retryable() bool method, which that rule honours.

// stallError is a body that stopped arriving: no byte for the stall timeout.
type stallError struct{ After string }

func (e *stallError) Error() string   { return "no data received for " + e.After }
func (e *stallError) Retryable() bool { return true }

// Timeout makes it a timeout to netfail.Classify.
func (e *stallError) Timeout() bool { return true }
