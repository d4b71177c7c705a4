package upstream

// Names the external tests (package upstream_test) need and the program does not: ci reaches
// the check and the update through Run, which builds these itself.
type (
	Checker      = checker
	RefusedError = refusedError
	Updater      = updater
	Version      = version
)

const TrackLatest = trackLatest

var (
	ErrRateLimited = errRateLimited
	NewClient      = newClient
	WithGitHubAPI  = withGitHubAPI
	WithHTTPClient = withHTTPClient
	WithNginxOrg   = withNginxOrg
	WithRegistry   = withRegistry
	WithRetries    = withRetries
	WithSink       = withSink
	WithToken      = withToken
)
