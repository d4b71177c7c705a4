package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// NewTraining returns the pgo plan of l and opts cut after its training: the stages the
// training needs and pgo-train itself, which is Final. Its output (OUT/pgo) is the profile
// `ci pgo-profile` records into the lock (lock.Profile, with the plan's TrainingKey). It
// always trains, whatever the lock has recorded.
func NewTraining(l *lock.Lock, opts ...Option) (*Plan, error) {
	opts = append(append([]Option(nil), opts...), WithOptimize(OptimizePGO), func(o *options) error {
		o.training = true
		return nil
	})
	return New(l, opts...)
}

// trainingKey is the digest of everything a training's counters depend on: the platform
// and, for pgo-train and every stage it reads (transitively), the stage's name, source
// checksum, dependencies, environment (flags, CPU level), files (the training workload,
// keys, configs) and script. Two plans with the same key instrument the same code the same
// way and train it with the same workload, so one's recorded profile fits the other. The
// compiler is not in it (the host engine's is the machine's): a recorded profile carries
// the compiler it was trained with, which stage pgo-profile checks.
func trainingKey(p *Plan) string {
	type file struct {
		Path   string
		Mode   uint32
		SHA256 string
	}
	type stage struct {
		Name, Source, Script string
		Deps                 []string
		Env                  []EnvVar
		Files                []file
	}
	doc := struct {
		Version  int
		Platform string
		Stages   []stage
	}{Version: 1, Platform: p.Platform.String()}
	for _, s := range closure(p.Stages, StagePGOTrain) {
		st := stage{Name: s.Name, Source: s.Source.Pin(), Script: s.Script, Deps: s.Deps, Env: s.Env}
		for _, f := range s.Files {
			sum := sha256.Sum256(f.Data)
			st.Files = append(st.Files, file{f.Path, f.Mode, hex.EncodeToString(sum[:])})
		}
		doc.Stages = append(doc.Stages, st)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("plan: encoding the training key: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// closure returns the named stage and every stage it reads, transitively, in plan order.
func closure(stages []Stage, name string) []Stage {
	need := map[string]bool{name: true}
	for i := len(stages) - 1; i >= 0; i-- {
		if need[stages[i].Name] {
			for _, d := range stages[i].Deps {
				need[d] = true
			}
		}
	}
	var out []Stage
	for _, s := range stages {
		if need[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

// withoutStages returns stages without the named ones.
func withoutStages(stages []Stage, names ...string) []Stage {
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	var out []Stage
	for _, s := range stages {
		if !drop[s.Name] {
			out = append(out, s)
		}
	}
	return out
}
