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

// CrossEdits are the script lines a cross build rewrites (TestCrossEditsApply).
func CrossEdits() (from, to []string) {
	for _, e := range crossEdits {
		from, to = append(from, e.from), append(to, e.to)
	}
	return from, to
}
