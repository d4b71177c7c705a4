package plan

// Names the external tests (package plan_test) need and the program does not.
var ApplyModules = applyModules

// The smoke client's declared inputs, which TestSmokeClientDeclaredInputs holds to go list.
var (
	SmokeClientPackages = smokeClientPackages
	SmokeClientModules  = smokeClientModules
)

const (
	StageOpenSSLInstrumented = stageOpenSSLInstrumented
	StagePGOProfile          = stagePGOProfile
)
