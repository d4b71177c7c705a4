package plan

// Names the external tests (package plan_test) need and the program does not.
var ApplyModules = applyModules

const (
	StageOpenSSLInstrumented = stageOpenSSLInstrumented
	StagePGOProfile          = stagePGOProfile
)
