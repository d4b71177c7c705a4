package actions

// The workflows' security and ordering rules, written as checkers that return the problems
// they find, so that each rule is run twice: on the real workflow (no problem allowed) and on
// a deliberately broken copy of it (the problem must be found). A rule that cannot fail is
// caught by TestWorkflowRulesCatchMistakes.

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// projectCodeRE matches a run: script that executes something from the repository or a
// toolchain that would: go, make, an interpreter on a file, a path into the checkout
// (./ci, ./.ci/test, .ci/run, ../x).
var projectCodeRE = regexp.MustCompile("(?m)(?:^|[\\s;&|(`])(?:go|make|python3?|node|npm|npx|perl|ruby)\\s" +
	"|(?:^|[\\s;&|(])(?:bash|sh|source|\\.)\\s+[^-\\s]" +
	"|(?:^|[\\s;&|(\"'=])\\.{0,2}/?\\.ci/" +
	"|(?:^|[\\s;&|(\"'=])\\.{1,2}/")

// writeLineRE finds "scope: write" lines in a workflow's text, with their comment if any.
var writeLineRE = regexp.MustCompile(`(?m)^\s+([a-z-]+):\s*write\s*(#.*)?$`)

// pushJobPR: a job that pushes to a registry.
func jobPushes(j *actionlint.Job) bool {
	for _, s := range j.Steps {
		if r := runOf(s); strings.Contains(r, "--push") || strings.Contains(r, "ci manifest") {
			return true
		}
		if in := inputOf(s, "push-to-registry"); in == "true" {
			return true
		}
	}
	return false
}

// stepName is the step's name: for messages.
func stepName(s *actionlint.Step) string {
	if s.Name != nil {
		return s.Name.Value
	}
	return ""
}

func runOf(s *actionlint.Step) string {
	if e, ok := s.Exec.(*actionlint.ExecRun); ok && e.Run != nil {
		return e.Run.Value
	}
	return ""
}

// actionOf is the action a step uses, without its @ref ("actions/checkout").
func actionOf(s *actionlint.Step) string {
	if e, ok := s.Exec.(*actionlint.ExecAction); ok && e.Uses != nil {
		a, _, _ := strings.Cut(e.Uses.Value, "@")
		return a
	}
	return ""
}

func inputOf(s *actionlint.Step, name string) string {
	if e, ok := s.Exec.(*actionlint.ExecAction); ok {
		if in, ok := e.Inputs[name]; ok && in.Value != nil {
			return strings.TrimSpace(in.Value.Value)
		}
	}
	return ""
}

func stepID(s *actionlint.Step) string {
	if s.ID != nil {
		return s.ID.Value
	}
	return ""
}

// runsProjectCode says whether a job executes anything of this repository's (and what).
func runsProjectCode(j *actionlint.Job) (bool, string) {
	for _, s := range j.Steps {
		a := actionOf(s)
		switch {
		case a == "actions/setup-go":
			return true, "sets up Go"
		case strings.HasPrefix(a, "./"):
			return true, "uses the local action " + a
		}
		if m := projectCodeRE.FindString(runOf(s)); m != "" {
			return true, fmt.Sprintf("runs %q", strings.TrimSpace(m))
		}
	}
	return false, ""
}

func jobNeeds(j *actionlint.Job, id string) bool {
	for _, n := range j.Needs {
		if strings.EqualFold(n.Value, id) {
			return true
		}
	}
	return false
}

// jobsWhere lists the IDs (sorted) of the jobs with a step that satisfies f.
func jobsWhere(w *actionlint.Workflow, f func(*actionlint.Step) bool) []string {
	var ids []string
	for id, j := range w.Jobs {
		for _, s := range j.Steps {
			if f(s) {
				ids = append(ids, id)
				break
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// pushJobsWhere is jobsWhere among the jobs kept off pull requests: the pull request's own
// gates (the check job builds, smoke-tests and scans what it built) run the same commands
// and actions, and the rules about what guards a push are about the jobs that push.
func pushJobsWhere(w *actionlint.Workflow, f func(*actionlint.Step) bool) []string {
	var ids []string
	for _, id := range jobsWhere(w, f) {
		if offPR(w, w.Jobs[id]) {
			ids = append(ids, id)
		}
	}
	return ids
}

func runContains(sub string) func(*actionlint.Step) bool {
	return func(s *actionlint.Step) bool { return strings.Contains(runOf(s), sub) }
}

func usesAction(a string) func(*actionlint.Step) bool {
	return func(s *actionlint.Step) bool { return actionOf(s) == a }
}

// offPR: the job never runs for pull requests, by its own if: or through a job it needs.
func offPR(w *actionlint.Workflow, j *actionlint.Job) bool {
	if j.If != nil && strings.Contains(j.If.Value, "!= 'pull_request'") {
		return true
	}
	return needsNonPR(w, j)
}

// matrixRows returns the include: rows of a job's matrix as strings.
func matrixRows(j *actionlint.Job) []map[string]string {
	if j.Strategy == nil || j.Strategy.Matrix == nil || j.Strategy.Matrix.Include == nil {
		return nil
	}
	var rows []map[string]string
	for _, c := range j.Strategy.Matrix.Include.Combinations {
		row := map[string]string{}
		for k, a := range c.Assigns {
			if s, ok := a.Value.(*actionlint.RawYAMLString); ok {
				row[k] = s.Value
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// arches lists the distinct architectures of a job's matrix rows, sorted.
func arches(j *actionlint.Job) []string {
	return distinct(j, "arch")
}

// variants lists the distinct image variants of a job's matrix rows, sorted.
func variants(j *actionlint.Job) []string {
	return distinct(j, "variant")
}

func distinct(j *actionlint.Job, key string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range matrixRows(j) {
		if v, ok := r[key]; ok && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// legs lists a job's matrix rows as "variant/arch" (one leg each, duplicates kept), sorted:
// what a per-leg job (build, smoke, scan) covers.
func legs(j *actionlint.Job) []string {
	var out []string
	for _, r := range matrixRows(j) {
		out = append(out, r["variant"]+"/"+r["arch"])
	}
	sort.Strings(out)
	return out
}

var stepOutputRE = regexp.MustCompile(`^\$\{\{\s*steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)\s*\}\}$`)

// permissionProblems: read-only defaults; each write scope where it is used and said why;
// a job that runs our code holds no write token but packages: write to push; pull requests
// get nothing; only a job that runs no code of ours may sign (id-token, attestations).
func permissionProblems(name, text string, w *actionlint.Workflow) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, name+": "+fmt.Sprintf(format, a...)) }
	if got := scopes(w.Permissions); len(got) != 1 || got["contents"] != "read" {
		add("top-level permissions = %v, want exactly contents: read", got)
	}
	if w.Concurrency == nil {
		add("no concurrency group")
	}
	for _, m := range writeLineRE.FindAllStringSubmatch(text, -1) {
		if strings.TrimSpace(strings.TrimPrefix(m[2], "#")) == "" {
			add("%s: write has no comment saying why it is needed", m[1])
		}
	}
	for id, j := range w.Jobs {
		perms := scopes(j.Permissions)
		if _, all := perms["*"]; all {
			add("job %s sets permissions for every scope at once (%s)", id, perms["*"])
		}
		pushes := jobPushes(j)
		code, why := runsProjectCode(j)
		if perms["packages"] == "write" && !pushes {
			add("job %s has packages: write but does not push", id)
		}
		if pushes && perms["packages"] != "write" {
			add("job %s pushes without packages: write", id)
		}
		for _, s := range j.Steps {
			if actionOf(s) == "docker/login-action" && perms["packages"] != "read" && perms["packages"] != "write" {
				add("job %s logs in to the registry without a packages permission", id)
			}
		}
		if j.If != nil && strings.Contains(j.If.Value, "== 'pull_request'") {
			if pushes || len(perms) > 0 {
				add("pull-request job %s pushes or widens permissions (%v)", id, perms)
			}
		}
		if pushes && !offPR(w, j) {
			add("job %s pushes but is not kept off pull requests", id)
		}
		// Issue 47: setup-go restores a cache of modules and build outputs that any run on
		// the repository's branches may have saved, pull requests' included: a job that
		// pushes, signs or attests builds only from what it fetched and checked itself.
		if writes := pushes || slices.Contains(slices.Collect(maps.Values(perms)), "write"); writes {
			for _, s := range j.Steps {
				if actionOf(s) == "actions/setup-go" && inputOf(s, "cache") != "false" {
					add("job %s pushes, signs or attests and its setup-go restores a cache (cache: %q): set cache: false", id, inputOf(s, "cache"))
				}
			}
		}
		for scope, v := range perms {
			if v != "write" {
				continue
			}
			if code && !(scope == "packages" && pushes) {
				add("job %s runs project code (%s) and has %s: write", id, why, scope)
			}
			if (scope == "contents" || scope == "pull-requests") && name != "update.yml" {
				add("job %s has %s: write", id, scope)
			}
		}
		attests := false
		for _, s := range j.Steps {
			if a := actionOf(s); a == "actions/attest-build-provenance" || a == "actions/attest-sbom" || a == "actions/attest" || cosignSignsRE.MatchString(runOf(s)) {
				attests = true
			}
		}
		signs := perms["id-token"] == "write" || perms["attestations"] == "write"
		if signs && !attests {
			add("job %s has id-token or attestations: write but attests nothing", id)
		}
		if perms["artifact-metadata"] == "write" && !attests {
			add("job %s has artifact-metadata: write but attests nothing", id)
		}
		if attests && (perms["id-token"] != "write" || perms["attestations"] != "write") {
			add("job %s attests without both id-token: write and attestations: write", id)
		}
		if signs && code {
			add("job %s can sign (id-token/attestations: write) and runs project code (%s)", id, why)
		}
	}
	return out
}

// buildProblems: each pushed digest is smoke-tested under runc on its own architecture before
// the tag-moving job, which needs that smoke job; a job that runs none of our code attests
// the index the tag-moving job pushed (provenance and SBOMs, pushed to the registry).
func buildProblems(w *actionlint.Workflow) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, "build.yml: "+fmt.Sprintf(format, a...)) }

	var pushIDs []string
	for _, id := range jobsWhere(w, runContains("--push")) {
		if offPR(w, w.Jobs[id]) {
			pushIDs = append(pushIDs, id)
		}
	}
	tagIDs := jobsWhere(w, runContains("ci manifest"))
	smokeIDs := pushJobsWhere(w, runContains("smoke --image"))
	attestIDs := jobsWhere(w, usesAction("actions/attest-build-provenance"))
	for what, ids := range map[string][]string{"pushes by digest (--push)": pushIDs, "moves the tags (ci manifest)": tagIDs, "smoke-tests the pushed digest (smoke --image)": smokeIDs, "attests build provenance": attestIDs} {
		if len(ids) != 1 {
			add("want exactly one job that %s, found %v", what, ids)
		}
	}
	if len(out) > 0 {
		return out
	}
	pushID, tagID, smokeID, attestID := pushIDs[0], tagIDs[0], smokeIDs[0], attestIDs[0]
	push, tag, smoke, attest := w.Jobs[pushID], w.Jobs[tagID], w.Jobs[smokeID], w.Jobs[attestID]

	// The push job moves no tag and writes the SBOM that the attest job signs.
	var pushRun string
	pushUploads := map[string]bool{}
	for _, s := range push.Steps {
		if strings.Contains(runOf(s), "--push") {
			pushRun = runOf(s)
		}
		if actionOf(s) == "actions/upload-artifact" {
			pushUploads[inputOf(s, "name")] = true
		}
	}
	if !strings.Contains(pushRun, "--digest-only") {
		add("job %s pushes without --digest-only: it would move tags before the runc smoke test", pushID)
	}
	if !strings.Contains(pushRun, "--output") {
		add("job %s does not write the image's SBOM (--output PATH writes PATH.spdx.json)", pushID)
	}
	if !pushUploads["sbom-${{ matrix.variant }}-${{ matrix.arch }}"] {
		add("job %s does not upload its SBOM as the artifact sbom-${{ matrix.variant }}-${{ matrix.arch }}", pushID)
	}

	// The runc smoke test: after the push, on exactly the pushed digest, as root, on a runner
	// of the image's architecture, for every architecture pushed; the tags wait for it.
	if !jobNeeds(smoke, pushID) {
		add("job %s does not need %s: it could run before the digest is pushed", smokeID, pushID)
	}
	if !jobNeeds(tag, smokeID) {
		add("the tag-moving job %s does not need %s: tags could move before the runc smoke test", tagID, smokeID)
	}
	if !offPR(w, smoke) {
		add("job %s is not kept off pull requests (nothing is pushed there)", smokeID)
	}
	var smokeRun string
	downloads := map[string]bool{}
	for _, s := range smoke.Steps {
		if strings.Contains(runOf(s), "smoke --image") {
			smokeRun = runOf(s)
		}
		if actionOf(s) == "actions/download-artifact" {
			downloads[inputOf(s, "name")] = true
		}
	}
	smokeLine := regexp.MustCompile(`(?m)^.*smoke --image.*$`).FindString(smokeRun)
	if !regexp.MustCompile(`^\s*sudo\s`).MatchString(smokeLine) {
		add("job %s runs the smoke test without sudo (runc needs root): %q", smokeID, smokeLine)
	}
	if !regexp.MustCompile(`smoke --image "?\$\{?IMAGE\}?@\$\{?[A-Za-z_]+\}?"?`).MatchString(smokeLine) {
		add("job %s does not smoke-test a digest reference ($IMAGE@$digest): %q", smokeID, smokeLine)
	}
	if !strings.Contains(smokeRun, "0 skipped") {
		add("job %s does not fail when a check is skipped", smokeID)
	}
	installs := false
	for _, s := range smoke.Steps {
		if r := runOf(s); strings.Contains(r, "apt-get install") && strings.Contains(r, "runc") && strings.Contains(r, "umoci") {
			installs = true
		}
	}
	if !installs {
		add("job %s does not install runc and umoci with apt-get", smokeID)
	}
	shared := false
	for n := range downloads {
		if strings.HasPrefix(n, "digest-") && pushUploads[n] {
			shared = true
		}
	}
	if !shared {
		add("job %s does not download the digest artifact job %s uploads (got %v)", smokeID, pushID, downloads)
	}
	// Where each leg runs (a native arm64 runner, or emulation on amd64): forkProblems.
	if a, b := legs(smoke), legs(push); strings.Join(a, ",") != strings.Join(b, ",") || len(a) == 0 {
		add("job %s smoke-tests the legs (variant/architecture) %v, but %s pushes %v", smokeID, a, pushID, b)
	}
	for scope, v := range scopes(smoke.Permissions) {
		if v == "write" {
			add("job %s only pulls, but has %s: write", smokeID, scope)
		}
	}

	// Attestation: its subject is the index the tag-moving job pushed, handed over as an
	// artifact (publishedIndex), for each variant the tag-moving job publishes.
	if !jobNeeds(attest, tagID) {
		add("job %s does not need the tag-moving job %s", attestID, tagID)
	}
	for _, id := range []string{tagID, attestID} {
		if a, b := variants(w.Jobs[id]), variants(push); strings.Join(a, ",") != strings.Join(b, ",") {
			add("job %s runs for the variants %v, but %s pushes %v", id, a, pushID, b)
		}
	}
	indexStep, problems := publishedIndex(tagID, tag, attestID, attest)
	for _, p := range problems {
		add("%s", p)
	}
	// subject resolves "${{ steps.S.outputs.X }}" to X, where S is the attesting job's step
	// that reads the published index.
	subject := func(expr, what string) string {
		if indexStep == nil {
			return ""
		}
		m := stepOutputRE.FindStringSubmatch(expr)
		if m == nil || m[1] != stepID(indexStep) {
			add("job %s: %s is %q, not an output of the step that reads the index the tag-moving job %s published", attestID, what, expr, tagID)
			return ""
		}
		if r := runOf(indexStep); !strings.Contains(r, m[2]+"=") || !strings.Contains(r, "GITHUB_OUTPUT") {
			add("job %s: %s: the step %s never sets the output %s", attestID, what, m[1], m[2])
			return ""
		}
		return m[2]
	}
	sboms := 0
	for _, s := range attest.Steps {
		a := actionOf(s)
		if a == "actions/attest-sbom" {
			add("job %s: %s uses actions/attest-sbom, deprecated (it prints so on every run): use actions/attest with sbom-path", attestID, stepName(s))
		}
		if a != "actions/attest-build-provenance" && a != "actions/attest-sbom" && a != "actions/attest" {
			continue
		}
		// A pushed attestation gets a storage record (create-storage-record, default true),
		// which needs artifact-metadata: write; without it every run warns and stores none.
		if inputOf(s, "push-to-registry") == "true" && inputOf(s, "create-storage-record") != "false" && scopes(attest.Permissions)["artifact-metadata"] != "write" {
			add("job %s: %s pushes its attestation (and creates a storage record) without artifact-metadata: write", attestID, stepName(s))
		}
		label := a
		if n := inputOf(s, "sbom-path"); n != "" {
			label += " " + n
		}
		if d := subject(inputOf(s, "subject-digest"), label+" subject-digest"); d != "" && d != "digest" {
			add("job %s: %s attests the step output %s, not the pushed digest", attestID, label, d)
		}
		if n := subject(inputOf(s, "subject-name"), label+" subject-name"); n != "" && n != "image" {
			add("job %s: %s names the subject by the step output %s, not the pushed image", attestID, label, n)
		}
		if inputOf(s, "push-to-registry") != "true" {
			add("job %s: %s does not push the attestation to the registry", attestID, label)
		}
		if inputOf(s, "sbom-path") != "" {
			sboms++
			if !strings.HasSuffix(inputOf(s, "sbom-path"), ".spdx.json") {
				add("job %s: %s attests no SPDX file", attestID, label)
			}
		}
	}
	if n := len(arches(push)); sboms != n {
		add("job %s attests %d SBOMs, want one per pushed architecture (%d)", attestID, sboms, n)
	}
	for id, j := range w.Jobs {
		p := scopes(j.Permissions)
		if id != attestID && (p["id-token"] != "" || p["attestations"] != "") {
			add("job %s has id-token or attestations permissions: only %s may", id, attestID)
		}
	}
	return out
}

// manifestVarRE finds the shell variable a script assigns ci manifest's output to.
var manifestVarRE = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)=\$\(go run \./ci manifest\b`)

// runnerTemp writes an input's ${{ runner.temp }} as a script names it.
func runnerTemp(in string) string {
	return regexp.MustCompile(`\$\{\{\s*runner\.temp\s*\}\}`).ReplaceAllString(in, "$$RUNNER_TEMP")
}

// publishedIndex follows the index the tag-moving job pushed to the job that attests it (a
// matrix job's outputs: hold one leg's values only, so the index travels as an artifact):
// the ci manifest step writes what ci manifest printed to a file, a later step of the
// tag-moving job uploads exactly that file, and the attesting job downloads that artifact by
// its name and, in one step, reads the file, checks it is $IMAGE_NAME (lower-cased)
// @sha256:<64 hex> and sets outputs from it. It returns that step, or nil and what breaks
// the chain.
func publishedIndex(tagID string, tag *actionlint.Job, attestID string, attest *actionlint.Job) (*actionlint.Step, []string) {
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	manifest, file := -1, ""
	for i, s := range tag.Steps {
		r := runOf(s)
		m := manifestVarRE.FindStringSubmatch(r)
		if m == nil {
			continue
		}
		manifest = i
		write := regexp.MustCompile(`(?m)^.*"\$\{?` + m[1] + `\}?".*>\s*"([^"]+)"\s*$`).FindStringSubmatch(r)
		if write != nil {
			file = write[1]
		}
	}
	if manifest < 0 || file == "" {
		add("job %s: the ci manifest step does not write what ci manifest printed (VAR=$(go run ./ci manifest ...)) to a file for %s", tagID, attestID)
		return nil, out
	}
	name := ""
	for _, s := range tag.Steps[manifest+1:] {
		if actionOf(s) == "actions/upload-artifact" && runnerTemp(inputOf(s, "path")) == file {
			name = inputOf(s, "name")
		}
	}
	if name == "" {
		add("job %s uploads no artifact holding the file its ci manifest step writes (%s)", tagID, file)
		return nil, out
	}
	read := ""
	for _, s := range attest.Steps {
		if actionOf(s) == "actions/download-artifact" && inputOf(s, "name") == name {
			read = runnerTemp(inputOf(s, "path")) + "/" + path.Base(file)
		}
	}
	if read == "" {
		add("job %s does not download the artifact %s that job %s uploads the published index as", attestID, name, tagID)
		return nil, out
	}
	for _, s := range attest.Steps {
		r := runOf(s)
		repo := regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)="\$\{IMAGE_NAME,,\}"`).FindStringSubmatch(r)
		if stepID(s) != "" && strings.Contains(r, `"`+read+`"`) && strings.Contains(r, "@(sha256:[0-9a-f]{64})$") &&
			repo != nil && strings.Contains(r, `"${BASH_REMATCH[1]}" != "$`+repo[1]+`"`) &&
			strings.Contains(r, "exit 1") && strings.Contains(r, "GITHUB_OUTPUT") {
			return s, out
		}
	}
	add("job %s has no step (with an id) that reads %s, checks it is ${IMAGE_NAME,,}@sha256:<64 hex> (the repository compared as \"${BASH_REMATCH[1]}\" != \"$VAR\", exit 1 otherwise) and sets outputs from it", attestID, read)
	return nil, out
}

// statusFuncRE matches an if: that runs a job whatever became of the jobs it needs.
var statusFuncRE = regexp.MustCompile(`\b(?:always|cancelled|failure)\(\)`)

// passRecordProblems: a tag-moving job whose if: runs it even when a job it needs failed
// (!cancelled(), so that one variant's failure does not hold back the other) cannot take its
// needs: on the runc smoke test and the vulnerability gate to mean they passed. Then each of
// those jobs records, per leg, the digest it passed, in its last step (an upload with no if:,
// which runs only when every step before it passed), and the tag-moving job downloads the
// records of its variant, checks them against the digests in one step that fails otherwise,
// and joins only the digests that step hands on.
func passRecordProblems(w *actionlint.Workflow) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, "build.yml: "+fmt.Sprintf(format, a...)) }
	tagIDs := jobsWhere(w, runContains("ci manifest"))
	smokeIDs := pushJobsWhere(w, runContains("smoke --image"))
	scanIDs := pushJobsWhere(w, usesAction("anchore/scan-action"))
	if len(tagIDs) != 1 || len(smokeIDs) != 1 || len(scanIDs) != 1 {
		return nil // buildProblems and gateAndSignProblems say so
	}
	tagID := tagIDs[0]
	tag := w.Jobs[tagID]
	if tag.If == nil || !statusFuncRE.MatchString(tag.If.Value) {
		return nil // needs: holds the tags back until every job it needs succeeded
	}
	manifest := -1
	for i, s := range tag.Steps {
		if strings.Contains(runOf(s), "ci manifest") {
			manifest = i
		}
	}
	var prefixes []string
	for _, id := range []string{smokeIDs[0], scanIDs[0]} {
		g := w.Jobs[id]
		if len(g.Steps) == 0 {
			continue
		}
		last := g.Steps[len(g.Steps)-1]
		if actionOf(last) != "actions/upload-artifact" || (last.If != nil && strings.TrimSpace(last.If.Value) != "") {
			add("job %s does not record its pass as its last step (an actions/upload-artifact step with no if:): %s, whose if: runs it whatever %s did, cannot tell", id, tagID, id)
			continue
		}
		name := inputOf(last, "name")
		if !strings.Contains(name, "${{ matrix.arch }}") || (len(variants(g)) > 0 && !strings.Contains(name, "${{ matrix.variant }}")) {
			add("job %s records its pass as %q, not one record per leg (variant and architecture)", id, name)
			continue
		}
		digestFile := ""
		for _, s := range g.Steps {
			if actionOf(s) == "actions/download-artifact" && strings.HasPrefix(inputOf(s, "name"), "digest-") {
				digestFile = inputOf(s, "path") + "/${{ matrix.arch }}"
			}
		}
		if p := inputOf(last, "path"); digestFile == "" || p != digestFile {
			add("job %s records %q as its pass, not the digest file it downloaded and tested (%s)", id, p, digestFile)
		}
		pattern := strings.Replace(name, "${{ matrix.arch }}", "*", 1)
		downloads := false
		for _, s := range tag.Steps {
			if actionOf(s) == "actions/download-artifact" && inputOf(s, "pattern") == pattern {
				downloads = true
			}
		}
		if !downloads {
			add("job %s does not download the records %s of job %s", tagID, pattern, id)
		}
		prefix, _, _ := strings.Cut(name, "${{")
		prefixes = append(prefixes, prefix)
	}
	if manifest < 0 || len(prefixes) == 0 {
		return out
	}
	var check *actionlint.Step
	for _, s := range tag.Steps[:manifest] {
		r := runOf(s)
		all := stepID(s) != "" && strings.Contains(r, "exit 1") && strings.Contains(r, "GITHUB_OUTPUT")
		for _, p := range prefixes {
			all = all && strings.Contains(r, p)
		}
		if all {
			check = s
		}
	}
	if check == nil {
		add("job %s has no step (with an id) before ci manifest that checks the records %v against the digests it joins (exit 1 otherwise) and hands the digests on", tagID, prefixes)
		return out
	}
	takes := false
	if env := tag.Steps[manifest].Env; env != nil {
		for _, v := range env.Vars {
			m := stepOutputRE.FindStringSubmatch(strings.TrimSpace(v.Value.Value))
			if m != nil && m[1] == stepID(check) && strings.Contains(runOf(check), m[2]+"=") {
				takes = true
			}
		}
	}
	if !takes {
		add("job %s: the ci manifest step does not take its digests from the step %s that checks the records", tagID, stepID(check))
	}
	return out
}

// defaultLock is the lock ci build, ci tags and ci manifest use without --lock, --tls, --zlib.
const defaultLock = "pipeline/lock/stack.lock.json"

// seedLock is the design card's stack (nginx 1.26.2, OpenSSL 3.3.1), kept buildable by name
// with --lock and never published: known-vulnerable, so no variant of the workflow builds it.
const seedLock = "pipeline/lock/seed.lock.json"

var (
	// ciVariantRE matches a script line that runs a ci command the variant's flags change.
	ciVariantRE = regexp.MustCompile(`(?m)^.*\./ci (?:build|tags|manifest)\b.*$`)
	// expectLockRE: the runc smoke test compares the image with the leg's lock.
	expectLockRE = regexp.MustCompile(`--expect-lock "\$\{?EXPECT_LOCK\}?"`)
)

// envOf is a step's env: (actionlint keys it by lower-cased name), values trimmed.
func envOf(s *actionlint.Step) map[string]string {
	env := map[string]string{}
	if s.Env != nil {
		for k, v := range s.Env.Vars {
			if v.Value != nil {
				env[strings.ToLower(k)] = strings.TrimSpace(v.Value.Value)
			}
		}
	}
	return env
}

// variantProblems: every image variant (the matrix dimension variant) goes the whole way:
// the pull-request check builds the legs (variant/architecture) the push job pushes, and the
// jobs that publish, smoke-test and attest run for the same variants; each variant has one
// flags value and one lock wherever it appears, the default (no flags) has ci's default lock
// and each shipped pipeline/lock/*.lock.json is some variant's; every ci build, ci tags and
// ci manifest of a variant leg gets the leg's flags (through env:, never ${{ }} in the
// script), and the runc smoke test expects the leg's lock. Without the flags a variant's
// image would be built from the default lock, or its index tagged with the default's tags.
func variantProblems(w *actionlint.Workflow) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, "build.yml: "+fmt.Sprintf(format, a...)) }
	var pushIDs []string
	for _, id := range jobsWhere(w, runContains("--push")) {
		if offPR(w, w.Jobs[id]) {
			pushIDs = append(pushIDs, id)
		}
	}
	if len(pushIDs) != 1 {
		return nil // buildProblems says so
	}
	pushID := pushIDs[0]
	push := w.Jobs[pushID]
	pushVariants := strings.Join(variants(push), ",")

	ids := make([]string, 0, len(w.Jobs))
	for id := range w.Jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	type seen struct{ value, job string }
	fields := map[string]map[string]seen{"flags": {}, "lock": {}} // field -> variant -> first value
	for _, id := range ids {
		j := w.Jobs[id]
		if len(variants(j)) == 0 {
			for _, s := range j.Steps {
				if ciVariantRE.MatchString(runOf(s)) && len(variants(push)) > 0 {
					add("job %s runs ci build, tags or manifest (step %q) but has no variant in its matrix (%s pushes %v)", id, stepName(s), pushID, variants(push))
				}
			}
			continue
		}
		if got := strings.Join(variants(j), ","); got != pushVariants {
			add("job %s runs for the variants %v, but %s pushes %v", id, variants(j), pushID, variants(push))
		}
		if len(arches(j)) > 0 && id != pushID {
			if a, b := legs(j), legs(push); strings.Join(a, ",") != strings.Join(b, ",") {
				add("job %s builds the legs (variant/architecture) %v, but %s pushes %v", id, a, pushID, b)
			}
		}
		for _, r := range matrixRows(j) {
			for field, byVariant := range fields {
				v, ok := r[field]
				if !ok {
					continue
				}
				if first, ok := byVariant[r["variant"]]; !ok {
					byVariant[r["variant"]] = seen{v, id}
				} else if first.value != v {
					add("variant %s has %s %q in job %s but %q in job %s", r["variant"], field, first.value, first.job, v, id)
				}
			}
		}
		_, hasFlags := matrixRows(j)[0]["flags"]
		_, hasLock := matrixRows(j)[0]["lock"]
		for _, s := range j.Steps {
			r, env := runOf(s), envOf(s)
			if lines := ciVariantRE.FindAllString(r, -1); len(lines) > 0 {
				if !hasFlags {
					add("job %s runs ci build, tags or manifest for each variant, but its matrix has no flags", id)
				} else if env["variant_flags"] != "${{ matrix.flags }}" || !strings.Contains(r, `read -ra variant_flags <<< "$VARIANT_FLAGS"`) {
					add("job %s: step %q does not take the variant's flags from env VARIANT_FLAGS: ${{ matrix.flags }} (read -ra variant_flags <<< \"$VARIANT_FLAGS\")", id, stepName(s))
				}
				for _, l := range lines {
					if !strings.Contains(l, `"${variant_flags[@]}"`) {
						add("job %s runs %q without the variant's flags (\"${variant_flags[@]}\")", id, strings.TrimSpace(l))
					}
				}
			}
			if strings.Contains(r, "smoke --image") && (!hasLock || !expectLockRE.MatchString(r) || env["expect_lock"] != "${{ matrix.lock }}") {
				add("job %s: the runc smoke test does not compare with the variant's lock (--expect-lock \"$EXPECT_LOCK\", env EXPECT_LOCK: ${{ matrix.lock }})", id)
			}
		}
	}
	locks := map[string]string{}
	for _, v := range variants(push) {
		flags, okF := fields["flags"][v]
		lock, okL := fields["lock"][v]
		if !okF || !okL {
			add("variant %s: no job's matrix gives both its flags and its lock", v)
			continue
		}
		if (flags.value == "") != (lock.value == defaultLock) {
			add("variant %s: flags %q with the lock %s (only no flags builds %s)", v, flags.value, lock.value, defaultLock)
		}
		if _, err := os.Stat(filepath.Join(testenv.RepoRoot(), lock.value)); err != nil {
			add("variant %s: its lock %s: %v", v, lock.value, err)
		}
		if other, dup := locks[lock.value]; dup {
			add("variants %s and %s share the lock %s", other, v, lock.value)
		}
		locks[lock.value] = v
	}
	shipped, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "*.lock.json"))
	for _, f := range shipped {
		rel := "pipeline/lock/" + filepath.Base(f)
		if rel == seedLock {
			continue
		}
		if _, ok := locks[rel]; !ok {
			add("the shipped lock %s is no variant's: it is never built, smoke-tested or published", rel)
		}
	}
	return out
}

// runExpressionProblems: no ${{ }} inside a run: script (what it expands to becomes shell
// code); values reach scripts through env:.
func runExpressionProblems(name string, w *actionlint.Workflow) []string {
	var out []string
	for id, j := range w.Jobs {
		for _, s := range j.Steps {
			if strings.Contains(runOf(s), "${{") {
				out = append(out, fmt.Sprintf("%s: job %s: step %q puts ${{ }} into its run: script; pass the value through env:", name, id, stepName(s)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// cosignSignsRE matches a run: script that signs or attests with cosign.
var cosignSignsRE = regexp.MustCompile(`(?m)\bcosign\s+(sign|attest)\b`)

// vulnAllowFile is the reviewed per-CVE override file of the vulnerability gate.
const vulnAllowFile = ".github/vuln-allow.yaml"

// gateAndSignProblems: every pushed architecture's SBOM is scanned by a pinned scanner in a
// job the tag-moving job needs (fixable critical findings fail it, findings go to the step
// summary, overrides come only from the reviewed file); the index the tag-moving job pushed
// is signed keylessly by digest with a pinned cosign, and its SBOMs attested with cosign, in
// the one job that may mint an OIDC token.
func gateAndSignProblems(w *actionlint.Workflow) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, "build.yml: "+fmt.Sprintf(format, a...)) }
	scanIDs := pushJobsWhere(w, usesAction("anchore/scan-action"))
	tagIDs := jobsWhere(w, runContains("ci manifest"))
	signIDs := jobsWhere(w, func(s *actionlint.Step) bool { return cosignSignsRE.MatchString(runOf(s)) })
	var pushIDs []string
	for _, id := range jobsWhere(w, runContains("--push")) {
		if offPR(w, w.Jobs[id]) {
			pushIDs = append(pushIDs, id)
		}
	}
	if len(scanIDs) != 1 || len(tagIDs) != 1 || len(signIDs) != 1 || len(pushIDs) != 1 {
		add("want exactly one scanning job (anchore/scan-action), one tag-moving job, one cosign-signing job and one pushing job; found %v, %v, %v, %v", scanIDs, tagIDs, signIDs, pushIDs)
		return out
	}
	scanID, tagID, signID, pushID := scanIDs[0], tagIDs[0], signIDs[0], pushIDs[0]
	scan, tag, signer := w.Jobs[scanID], w.Jobs[tagID], w.Jobs[signID]

	// The gate: before the tags, after the push, for every pushed architecture.
	if !jobNeeds(tag, scanID) {
		add("the tag-moving job %s does not need the vulnerability gate %s: tags could move to a vulnerable image", tagID, scanID)
	}
	if !jobNeeds(scan, pushID) {
		add("job %s does not need %s: there is nothing to scan before the push", scanID, pushID)
	}
	if !offPR(w, scan) {
		add("job %s is not kept off pull requests (nothing is pushed there)", scanID)
	}
	if a, b := legs(scan), legs(w.Jobs[pushID]); strings.Join(a, ",") != strings.Join(b, ",") || len(a) == 0 {
		add("job %s scans the legs (variant/architecture) %v, but %s pushes %v", scanID, a, pushID, b)
	}
	if code, why := runsProjectCode(scan); code {
		add("job %s runs project code (%s): the gate must not run what it judges", scanID, why)
	}
	for scope, v := range scopes(scan.Permissions) {
		if v == "write" {
			add("job %s only reads, but has %s: write", scanID, scope)
		}
	}
	var gate string
	scanned := false
	for _, s := range scan.Steps {
		if actionOf(s) == "anchore/scan-action" {
			scanned = true
			if !strings.Contains(inputOf(s, "sbom"), "sboms/${{ matrix.arch }}.spdx.json") {
				add("job %s: the scanner reads %q, not the pushed architecture's SBOM", scanID, inputOf(s, "sbom"))
			}
			if inputOf(s, "config") != vulnAllowFile {
				add("job %s: the scanner's config is %q, not the reviewed override file %s", scanID, inputOf(s, "config"), vulnAllowFile)
			}
			if inputOf(s, "output-format") != "json" {
				add("job %s: the scanner writes no JSON report for the gate", scanID)
			}
		}
		if r := runOf(s); scanned && strings.Contains(r, "GITHUB_STEP_SUMMARY") {
			gate = r
		}
	}
	if gate == "" {
		add("job %s has no step after the scanner that lists the findings in the step summary", scanID)
	} else if !strings.Contains(gate, `"Critical"`) || !strings.Contains(gate, `fix.state == "fixed"`) || !strings.Contains(gate, "exit 1") {
		add("job %s: the gate does not fail on fixable critical findings (Critical, fix.state fixed, exit 1)", scanID)
	}
	raw, err := os.ReadFile(filepath.Join(workflowDir(), "..", "vuln-allow.yaml"))
	if err != nil {
		add("the override file %s cannot be read: %v", vulnAllowFile, err)
	} else if !regexp.MustCompile(`(?m)^ignore:`).Match(raw) {
		add("the override file %s has no grype ignore: list", vulnAllowFile)
	}

	// Keyless signing: the index the tag-moving job pushed, by digest, with a pinned cosign.
	indexStep, _ := publishedIndex(tagID, tag, signID, signer) // buildProblems reports a broken chain
	installs := false
	for _, s := range signer.Steps {
		if actionOf(s) == "sigstore/cosign-installer" {
			installs = true
		}
		r := runOf(s)
		if !cosignSignsRE.MatchString(r) {
			continue
		}
		if !regexp.MustCompile(`cosign sign --yes "\$IMAGE@\$DIGEST"`).MatchString(r) {
			add("job %s does not sign the pushed index by digest (cosign sign --yes \"$IMAGE@$DIGEST\")", signID)
		}
		if !regexp.MustCompile(`cosign attest --yes --type spdxjson --predicate "[^"]+\.spdx\.json" "\$IMAGE@\$DIGEST"`).MatchString(r) {
			add("job %s does not attest the SBOMs with cosign (cosign attest --yes --type spdxjson ... \"$IMAGE@$DIGEST\")", signID)
		}
		env := map[string]string{}
		if s.Env != nil {
			for k, v := range s.Env.Vars {
				env[k] = strings.TrimSpace(v.Value.Value)
			}
		}
		for v, output := range map[string]string{"image": "image", "digest": "digest"} {
			m := stepOutputRE.FindStringSubmatch(env[v])
			if m == nil || indexStep == nil || m[1] != stepID(indexStep) || m[2] != output {
				add("job %s: %s is %q, not the output %s of the step that reads the index the tag-moving job %s published", signID, strings.ToUpper(v), env[v], output, tagID)
			}
		}
	}
	if !installs {
		add("job %s signs without installing cosign with sigstore/cosign-installer", signID)
	}
	if !jobNeeds(signer, tagID) {
		add("job %s does not need the tag-moving job %s", signID, tagID)
	}
	return out
}

// updateProblems: the job that runs check-updates is read-only and hands the lock and body
// on as an artifact; the job that opens the pull request has the write scopes and runs none
// of our code, only pinned actions from a short list.
func updateProblems(w *actionlint.Workflow) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, "update.yml: "+fmt.Sprintf(format, a...)) }
	checkIDs := jobsWhere(w, runContains("check-updates --write"))
	prIDs := jobsWhere(w, usesAction("peter-evans/create-pull-request"))
	if len(checkIDs) != 1 || len(prIDs) != 1 || (len(checkIDs) == 1 && len(prIDs) == 1 && checkIDs[0] == prIDs[0]) {
		add("want one job that runs check-updates --write and another that opens the pull request, found %v and %v", checkIDs, prIDs)
		return out
	}
	checkID, prID := checkIDs[0], prIDs[0]
	check, pr := w.Jobs[checkID], w.Jobs[prID]

	if p := scopes(check.Permissions); len(p) != 1 || p["contents"] != "read" {
		add("job %s runs project code: want permissions exactly contents: read, got %v", checkID, p)
	}
	uploads := map[string]bool{}
	for _, s := range check.Steps {
		if actionOf(s) == "actions/upload-artifact" {
			uploads[inputOf(s, "name")] = true
		}
		// The pull request's body is what check-updates verified (--pr-body), not text a
		// script writes about it: a hand-written body once claimed every signature was
		// verified while a component had none (issue 12).
		run := runOf(s)
		switch {
		case strings.Contains(run, "check-updates --write") && !strings.Contains(run, "--pr-body"):
			add("job %s runs check-updates --write without --pr-body: the pull request's body must list what it verified", checkID)
		case !strings.Contains(run, "check-updates") && strings.Contains(run, "body.md"):
			add("job %s writes the pull request's body in a script (step %q); let check-updates --pr-body write it", checkID, stepName(s))
		}
	}
	if len(uploads) == 0 {
		add("job %s hands nothing on (no actions/upload-artifact step)", checkID)
	}
	// Both locks are checked and rewritten in the same run (the default lock may be named by
	// --lock or be check-updates' default).
	for _, l := range []string{"stack", "aws-lc"} {
		found := false
		for _, s := range check.Steps {
			run := runOf(s)
			if strings.Contains(run, "check-updates --write") && (strings.Contains(run, "--lock pipeline/lock/"+l+".lock.json") || (l == "stack" && !strings.Contains(run, "--lock"))) {
				found = true
			}
		}
		if !found {
			add("job %s does not run check-updates --write on pipeline/lock/%s.lock.json", checkID, l)
		}
	}
	// A lock's check may fail without holding back the other lock's update (continue-on-error)
	// only if a job then fails the run for it.
	continues := false
	for _, s := range check.Steps {
		if strings.Contains(runOf(s), "check-updates --write") && s.ContinueOnError != nil && (s.ContinueOnError.Value || s.ContinueOnError.Expression != nil) {
			continues = true
		}
	}
	if continues {
		failSeen := false
		for _, j := range w.Jobs {
			if j.If != nil && strings.Contains(j.If.Value, "needs."+checkID+".outputs.failed != ''") {
				for _, st := range j.Steps {
					if strings.Contains(runOf(st), "exit 1") {
						failSeen = true
					}
				}
			}
		}
		if !failSeen {
			add("job %s continues after a failed check-updates, but no job fails the run for it (if: needs.%s.outputs.failed != '' and exit 1)", checkID, checkID)
		}
	}
	// A refreshed signer key rewrites a tracked file, which an untracked-files listing misses.
	for _, s := range check.Steps {
		if run := runOf(s); strings.Contains(run, "ls-files") && strings.Contains(run, "pipeline/lock/keys") && !strings.Contains(run, "--modified") {
			add("job %s hands on only new key files (git ls-files without --modified): a refreshed vendored key would not reach the pull request", checkID)
		}
	}

	if p := scopes(pr.Permissions); p["contents"] != "write" || p["pull-requests"] != "write" || len(p) != 2 {
		add("job %s: want permissions exactly contents: write and pull-requests: write, got %v", prID, p)
	}
	if !jobNeeds(pr, checkID) {
		add("job %s does not need %s", prID, checkID)
	}
	if code, why := runsProjectCode(pr); code {
		add("job %s holds a write token and runs project code (%s)", prID, why)
	}
	allowed := map[string]bool{"actions/checkout": true, "actions/download-artifact": true, "peter-evans/create-pull-request": true}
	gets := false
	for _, s := range pr.Steps {
		a := actionOf(s)
		if a != "" && !allowed[a] {
			add("job %s uses %s, which is not on its short list of actions", prID, a)
		}
		if a == "actions/download-artifact" && uploads[inputOf(s, "name")] {
			gets = true
		}
		if a == "actions/checkout" && inputOf(s, "persist-credentials") != "false" {
			add("job %s checks out with persisted credentials", prID)
		}
		if a == "peter-evans/create-pull-request" {
			// create-pull-request runs git add -- <add-paths>, which refuses the whole list
			// when one pathspec matches nothing; a fixed list with the profiles in it fails
			// every run that records none (issue 36). TestUpdatePullRequestAddsPaths runs
			// the listing step.
			ap := inputOf(s, "add-paths")
			if m := stepOutputRE.FindStringSubmatch(ap); m == nil {
				add("job %s: add-paths is a fixed list (%q): git add refuses the whole list when one pathspec matches nothing (no PGO profile recorded in the run); take it from an earlier step that lists the pathspecs that match", prID, ap)
			} else if ps := pathsStep(pr, m[1]); ps == nil {
				add("job %s: add-paths is %q, but no earlier step has the id %s", prID, ap, m[1])
			} else if got := addPathsCandidates(runOf(ps)); !slices.Equal(got, wantAddPaths) {
				add("job %s commits %q (from step %s), want the two locks, vendored keys, PGO profiles and the advisories snapshot only", prID, got, m[1])
			}
			if inputOf(s, "body-path") == "" {
				add("job %s does not take the pull request's body from the artifact (body-path)", prID)
			}
		}
	}
	if !gets {
		add("job %s does not download the artifact %s uploads (%v)", prID, checkID, uploads)
	}
	// A partial update (exit 3) lands what passed; the refusal must still turn the run red.
	seen := false
	for _, j := range w.Jobs {
		if j.If != nil && strings.Contains(j.If.Value, "needs."+checkID+".outputs.refused != ''") {
			for _, st := range j.Steps {
				if strings.Contains(runOf(st), "exit 1") {
					seen = true
				}
			}
		}
	}
	if !seen {
		add("no job fails the run when check-updates refused something (if: needs.%s.outputs.refused != '' and exit 1)", checkID)
	}
	return out
}

// wantAddPaths: what the update pull request may commit.
var wantAddPaths = []string{"pipeline/lock/stack.lock.json", "pipeline/lock/aws-lc.lock.json", "pipeline/lock/keys/*.asc", "pipeline/lock/profiles/*.tar.gz", "pipeline/advisory/advisories.json"}

// addPathsCandidateRE finds the pathspecs a listing script names (pipeline/lock/...).
var addPathsCandidateRE = regexp.MustCompile(`pipeline/(?:lock/|advisory/advisories\.json)[^\s'";]*`)

func addPathsCandidates(script string) []string {
	return addPathsCandidateRE.FindAllString(script, -1)
}

// pathsStep is the step of job j with the id, or nil.
func pathsStep(j *actionlint.Job, id string) *actionlint.Step {
	for _, s := range j.Steps {
		if stepID(s) == id {
			return s
		}
	}
	return nil
}

// goRunCIRE: a script line that runs the program with go run.
var goRunCIRE = regexp.MustCompile(`\bgo run (?:[^\n]*\s)?\./ci\b`)

// exitStatusRE: a script that reads an exit status.
var exitStatusRE = regexp.MustCompile(`\$\?|\$\{\?\}|PIPESTATUS`)

// exitStatusProblems: a step that branches on ci's exit status (check-updates' 3: partial)
// runs a built binary, since go run turns every non-zero exit of the program into 1.
func exitStatusProblems(name string, w *actionlint.Workflow) []string {
	var out []string
	for id, j := range w.Jobs {
		for _, s := range j.Steps {
			r := runOf(s)
			if goRunCIRE.MatchString(r) && exitStatusRE.MatchString(r) {
				out = append(out, fmt.Sprintf("%s: job %s: step %q reads an exit status of go run ./ci, which turns every non-zero exit of ci into 1 (go build -o BIN ./ci, then run BIN)", name, id, stepName(s)))
			}
		}
	}
	sort.Strings(out)
	return out
}

func readWorkflow(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(workflowDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func problemsOf(name, text string) ([]string, error) {
	w, errs := actionlint.Parse([]byte(text))
	if len(errs) > 0 {
		return nil, errs[0]
	}
	out := permissionProblems(name, text, w)
	out = append(out, runExpressionProblems(name, w)...)
	out = append(out, exitStatusProblems(name, w)...)
	switch name {
	case "build.yml":
		out = append(out, buildProblems(w)...)
		out = append(out, gateAndSignProblems(w)...)
		out = append(out, passRecordProblems(w)...)
		out = append(out, variantProblems(w)...)
		out = append(out, keylessSkipProblems(w)...)
		out = append(out, forkProblems(w)...)
	case "update.yml":
		out = append(out, updateProblems(w)...)
	}
	return out, nil
}

// keylessSkipRE matches the if: of a step that KEYLESS_SKIP_REASON skips.
var keylessSkipRE = regexp.MustCompile(`^vars\.KEYLESS_SKIP_REASON\s*==\s*''$`)

// needsOIDC: the step needs GitHub's OIDC token (keyless cosign, the attest actions), or
// installs the cosign only those steps run.
func needsOIDC(s *actionlint.Step) bool {
	switch actionOf(s) {
	case "sigstore/cosign-installer", "actions/attest-build-provenance", "actions/attest-sbom", "actions/attest":
		return true
	}
	return cosignSignsRE.MatchString(runOf(s))
}

// keylessSkipProblems: the repository variable KEYLESS_SKIP_REASON (the workflow tier's, empty
// on GitHub) skips exactly the steps that need the OIDC token, never another step or a whole
// job, and a run that skips them says why (a step that runs only then and prints the reason).
func keylessSkipProblems(w *actionlint.Workflow) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, "build.yml: "+fmt.Sprintf(format, a...)) }
	says := 0
	for id, j := range w.Jobs {
		if j.If != nil && strings.Contains(j.If.Value, "KEYLESS_SKIP_REASON") {
			add("job %s: its if: reads KEYLESS_SKIP_REASON, which may skip only the keyless steps", id)
		}
		for _, s := range j.Steps {
			cond := ""
			if s.If != nil {
				cond = strings.TrimSpace(s.If.Value)
			}
			skipped := keylessSkipRE.MatchString(cond)
			switch {
			case needsOIDC(s) && !skipped:
				add("job %s: step %q needs GitHub's OIDC token but KEYLESS_SKIP_REASON does not skip it (if: vars.KEYLESS_SKIP_REASON == '')", id, stepName(s))
			case !needsOIDC(s) && skipped:
				add("job %s: step %q does not need GitHub's OIDC token, yet KEYLESS_SKIP_REASON skips it: only the keyless steps may be skipped", id, stepName(s))
			case !needsOIDC(s) && strings.Contains(cond, "KEYLESS_SKIP_REASON"):
				if cond != "vars.KEYLESS_SKIP_REASON != ''" || !strings.Contains(runOf(s), "::warning::") || !strings.Contains(runOf(s), "$SKIP_REASON") || envOf(s)["skip_reason"] != "${{ vars.KEYLESS_SKIP_REASON }}" {
					add("job %s: step %q reads KEYLESS_SKIP_REASON but is not the step that says why the keyless steps are skipped (if: vars.KEYLESS_SKIP_REASON != '', ::warning:: with $SKIP_REASON from env SKIP_REASON: ${{ vars.KEYLESS_SKIP_REASON }})", id, stepName(s))
				} else {
					says++
				}
			}
		}
	}
	if says != 1 {
		add("%d steps say why the keyless steps are skipped, want one: a run without OIDC must say why it published an unsigned index", says)
	}
	return out
}

// TestWorkflowRules: build.yml and update.yml break none of their own rules above
// (TestWorkflowPermissions applies the permission rules to every workflow).
func TestWorkflowRules(t *testing.T) {
	for name, check := range map[string]func(*actionlint.Workflow) []string{"build.yml": buildProblems, "build.yml gate and signing": gateAndSignProblems, "build.yml pass records": passRecordProblems, "build.yml variants": variantProblems, "build.yml keyless skip": keylessSkipProblems, "build.yml fork": forkProblems, "update.yml": updateProblems} {
		name, _, _ = strings.Cut(name, " ")
		w, errs := actionlint.Parse([]byte(readWorkflow(t, name)))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", name, errs[0])
		}
		for _, p := range check(w) {
			t.Error(p)
		}
	}
	for _, name := range []string{"build.yml", "update.yml"} {
		w, errs := actionlint.Parse([]byte(readWorkflow(t, name)))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", name, errs[0])
		}
		for _, p := range exitStatusProblems(name, w) {
			t.Error(p)
		}
	}
}

// TestWorkflowRulesCatchMistakes breaks each rule in a copy of the real workflow and wants
// the checkers to say so.
func TestWorkflowRulesCatchMistakes(t *testing.T) {
	cases := []struct {
		file, name, old, new, want string
	}{
		// issue 47: a job that pushes restores no cache another run saved
		{"build.yml", "pushing job restores setup-go's cache",
			"          cache: false # it pushes: no Go cache another run saved (a pull request's too) is restored here\n",
			"          cache: true\n",
			"job build pushes, signs or attests and its setup-go restores a cache"},
		{"build.yml", "tagging job restores setup-go's cache by default",
			"          cache: false # it pushes and moves tags: no Go cache another run saved is restored here\n", "",
			"job merge pushes, signs or attests and its setup-go restores a cache"},
		// update.yml
		{"update.yml", "check job gets a write token",
			"    permissions:\n      contents: read\n    outputs:",
			"    permissions:\n      contents: write # push\n    outputs:",
			"runs project code (sets up Go) and has contents: write"},
		{"update.yml", "refreshed keys left behind",
			"git ls-files --others --modified --exclude-standard -- pipeline/lock/keys",
			"git ls-files --others --exclude-standard -- pipeline/lock/keys",
			"a refreshed vendored key would not reach the pull request"},
		{"update.yml", "pull-request job runs go",
			"      - name: Put the recorded PGO profiles in place\n        run: |\n",
			"      - name: Put the recorded PGO profiles in place\n        run: |\n          go run ./ci check-updates --lock pipeline/lock/stack.lock.json\n",
			"job pull-request holds a write token and runs project code"},
		{"update.yml", "pull-request job runs a repository script",
			`            jq -e 'type == "object"' "$dir/$lock.lock.json" > /dev/null`,
			`            ./.ci/check-lock "$dir/$lock.lock.json"`,
			"job pull-request holds a write token and runs project code"},
		{"update.yml", "pull-request job sets up Go",
			"      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0\n        if: needs.record-profiles.result == 'success'\n",
			"      - uses: actions/setup-go@d35c59abb061a4a6fb18e82ac0862c26744d6ab5 # v5.5.0\n      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0\n        if: needs.record-profiles.result == 'success'\n",
			"not on its short list"},
		{"update.yml", "no artifact handed on",
			"          name: update\n          path: ${{ runner.temp }}/update/\n",
			"          name: lock\n          path: ${{ runner.temp }}/update/\n",
			"does not download the artifact"},
		{"update.yml", "pull-request job without pull-requests: write",
			"      pull-requests: write # open or refresh the pull request\n", "",
			"want permissions exactly contents: write and pull-requests: write"},
		{"update.yml", "write permission without a reason",
			"      contents: write # push the update branch with the new locks\n",
			"      contents: write\n",
			"contents: write has no comment"},
		{"update.yml", "body not from check-updates",
			`"$RUNNER_TEMP/nginx-forge-ci" check-updates --write --lock pipeline/lock/aws-lc.lock.json --pr-body "$RUNNER_TEMP/update/aws-lc/body.md"`,
			`"$RUNNER_TEMP/nginx-forge-ci" check-updates --write --lock pipeline/lock/aws-lc.lock.json`,
			"without --pr-body"},
		{"update.yml", "hand-written body",
			`            cp "pipeline/lock/$lock.lock.json" "$RUNNER_TEMP/update/$lock/$lock.lock.json"`,
			`            cp "pipeline/lock/$lock.lock.json" "$RUNNER_TEMP/update/$lock/$lock.lock.json"; echo "All verified." > "$RUNNER_TEMP/update/$lock/body.md"`,
			"writes the pull request's body in a script"},
		{"update.yml", "pull-request job commits more than the lock and keys",
			"pipeline/advisory/advisories.json; do", "pipeline/advisory/advisories.json pipeline/lock/ci; do",
			"want the two locks, vendored keys, PGO profiles and the advisories snapshot only"},
		{"update.yml", "pull-request job leaves the variant's lock out",
			"pipeline/lock/stack.lock.json pipeline/lock/aws-lc.lock.json 'pipeline", "pipeline/lock/stack.lock.json 'pipeline",
			"want the two locks, vendored keys, PGO profiles and the advisories snapshot only"},
		// issue 36: git add refuses the whole add-paths list when one pathspec matches nothing
		{"update.yml", "fixed add-paths with the profiles (issue 36)",
			"          add-paths: ${{ steps.paths.outputs.paths }}\n",
			"          add-paths: |\n            pipeline/lock/stack.lock.json\n            pipeline/lock/aws-lc.lock.json\n            pipeline/lock/keys/*.asc\n            pipeline/lock/profiles/*.tar.gz\n",
			"add-paths is a fixed list"},
		{"update.yml", "add-paths from a step that does not exist",
			"        id: paths\n", "        id: list\n",
			"no earlier step has the id paths"},
		// issue 36: go run turns check-updates' exit 3 (partial) into 1
		{"update.yml", "exit status read through go run (issue 36)",
			`"$RUNNER_TEMP/nginx-forge-ci" check-updates --write --lock pipeline/lock/stack.lock.json`,
			`go run ./ci check-updates --write --lock pipeline/lock/stack.lock.json`,
			"reads an exit status of go run ./ci"},
		{"update.yml", "the variant's lock not checked",
			`"$RUNNER_TEMP/nginx-forge-ci" check-updates --write --lock pipeline/lock/aws-lc.lock.json`, `"$RUNNER_TEMP/nginx-forge-ci" check-updates --write --lock pipeline/lock/stack.lock.json`,
			"does not run check-updates --write on pipeline/lock/aws-lc.lock.json"},
		{"update.yml", "a failed lock check goes unseen",
			"    if: ${{ !cancelled() && needs.check-updates.outputs.failed != '' }}\n", "    if: false\n",
			"continues after a failed check-updates, but no job fails the run for it"},
		{"update.yml", "a refusal goes unseen",
			"    if: ${{ !cancelled() && needs.check-updates.outputs.refused != '' }}\n", "    if: false\n",
			"no job fails the run when check-updates refused something"},
		{"update.yml", "pull-request job not after the check",
			"    needs: [check-updates, record-profiles]\n", "    needs: [record-profiles]\n",
			"does not need check-updates"},
		// build.yml: the runc smoke test
		{"build.yml", "tags move without waiting for the runc smoke test",
			"    needs: [build, smoke, scan]\n", "    needs: [build, scan]\n",
			"tag-moving job merge does not need smoke"},
		{"build.yml", "smoke before the push",
			"    needs: build\n    name: smoke-test", "    needs: test\n    name: smoke-test",
			"job smoke does not need build"},
		{"build.yml", "smoke without root",
			`          sudo DOCKER_CONFIG="$HOME/.docker" "$RUNNER_TEMP/nginx-forge-ci" smoke`,
			`          "$RUNNER_TEMP/nginx-forge-ci" smoke`,
			"without sudo"},
		{"build.yml", "arm64 smoke never on an arm64 runner",
			"            lock: pipeline/lock/aws-lc.lock.json\n    runs-on: ${{ matrix.arch == 'arm64' && vars.ARM64_RUNNER || 'ubuntu-24.04' }}\n    timeout-minutes: 20",
			"            lock: pipeline/lock/aws-lc.lock.json\n    runs-on: ubuntu-24.04\n    timeout-minutes: 20",
			"job smoke runs its legs on \"ubuntu-24.04\""},
		{"build.yml", "arm64 build without emulation",
			"      - name: arm64 runner or emulation\n        if: matrix.arch == 'arm64'\n        env:\n          ARM64_RUNNER: ${{ vars.ARM64_RUNNER }}\n        run: |\n          if [[ -n \"$ARM64_RUNNER\" ]]; then\n            echo \"linux/arm64: built natively on the arm64 runner $ARM64_RUNNER (ARM64_RUNNER)\" >> \"$GITHUB_STEP_SUMMARY\"\n            exit 0\n          fi\n          # Only what the runner lacks (a self-hosted runner may have it registered already).\n          if [[ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]]; then\n            sudo apt-get update\n            sudo apt-get install -y --no-install-recommends qemu-user-static binfmt-support\n          fi\n          # F (fix binary): the kernel opens the interpreter at registration, so the Dagger\n          # engine's containers and runc's find it without a copy in their own file system.\n          if ! grep -Eq '^flags: .*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 2> /dev/null; then\n            echo \"::error::no arm64 emulation here: binfmt_misc has no qemu-aarch64 with the F flag; set the repository variable ARM64_RUNNER to an arm64 runner's label, or install qemu-user-static on this runner\"\n            exit 1\n          fi\n          echo \"linux/arm64: cross-compiled on this amd64 runner and smoke-tested under qemu-user emulation (no ARM64_RUNNER)\" >> \"$GITHUB_STEP_SUMMARY\"\n      - name: Install the Dagger CLI\n        uses: dagger/dagger-for-github@27b130bf0f79a7f6fbbbe0fbca6760dc9bb40a77 # v8.4.1\n        with:\n          version: ${{ env.DAGGER_VERSION }}\n      - name: Build and smoke-test (no push)",
			"      - name: Install the Dagger CLI\n        uses: dagger/dagger-for-github@27b130bf0f79a7f6fbbbe0fbca6760dc9bb40a77 # v8.4.1\n        with:\n          version: ${{ env.DAGGER_VERSION }}\n      - name: Build and smoke-test (no push)",
			"job check has no step \"arm64 runner or emulation\""},
		{"build.yml", "pull request without the runc smoke test",
			"          sudo \"$RUNNER_TEMP/nginx-forge-ci\" smoke --image \"oci:$RUNNER_TEMP/image-$ARCH\" \\\n            --expect-lock \"$EXPECT_LOCK\" | tee \"$RUNNER_TEMP/smoke.txt\"\n",
			"          echo 'passed, 0 failed, 0 skipped' > \"$RUNNER_TEMP/smoke.txt\"\n",
			"job check runs no runc smoke test of what it built"},
		{"build.yml", "pull request without the scan",
			"        id: grype\n        uses: anchore/scan-action@e1165082ffb1fe366ebaf02d8526e7c4989ea9d2 # v7.4.0\n        with:\n          sbom: ${{ runner.temp }}/sboms/${{ matrix.arch }}.spdx.json\n          config: .github/vuln-allow.yaml\n          output-format: json\n          output-file:",
			"        id: grype\n        uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2\n        with:\n          sbom: ${{ runner.temp }}/sboms/${{ matrix.arch }}.spdx.json\n          config: .github/vuln-allow.yaml\n          output-format: json\n          output-file:",
			"job check runs no vulnerability scan of what it built"},
		{"build.yml", "pull request's gate drifts from main's",
			"          if [[ -n \"$blocking\" ]]; then\n            # Each also in the summary: the annotation alone is the step's last output, which\n            # a runner can lose when the step fails at once (act's host mode does).\n            while IFS= read -r line; do\n              echo \"::error::$VARIANT $ARCH: fixable critical vulnerability $line\"\n              echo \"- $VARIANT $ARCH: fixable critical vulnerability $line\" >> \"$GITHUB_STEP_SUMMARY\"\n            done <<< \"$blocking\"\n            echo \"Fix them (update the lock or the base image), or accept one per CVE in .github/vuln-allow.yaml with its reason, through a reviewed pull request.\" >> \"$GITHUB_STEP_SUMMARY\"\n            exit 1\n          fi\n\n",
			"\n",
			"is not the scan job's scan step, word for word"},
		{"build.yml", "pull request logs in",
			"      - name: Build and smoke-test (no push)\n",
			"      - uses: docker/login-action@74a5d142397b4f367a81961eba4e8cd7edddf772 # v3.4.0\n        with:\n          registry: ${{ env.REGISTRY }}\n          username: ${{ vars.REGISTRY_USERNAME || github.actor }}\n          password: ${{ secrets.REGISTRY_PASSWORD || secrets.GITHUB_TOKEN }}\n      - name: Build and smoke-test (no push)\n",
			"job check logs in to a registry"},
		{"build.yml", "login with the actor's token only",
			"      - name: Log in to the registry (read)\n        uses: docker/login-action@74a5d142397b4f367a81961eba4e8cd7edddf772 # v3.4.0\n        with:\n          registry: ${{ env.REGISTRY }}\n          username: ${{ vars.REGISTRY_USERNAME || github.actor }}\n          password: ${{ secrets.REGISTRY_PASSWORD || secrets.GITHUB_TOKEN }}\n",
			"      - name: Log in to the registry (read)\n        uses: docker/login-action@74a5d142397b4f367a81961eba4e8cd7edddf772 # v3.4.0\n        with:\n          registry: ${{ env.REGISTRY }}\n          username: ${{ github.actor }}\n          password: ${{ secrets.GITHUB_TOKEN }}\n",
			"job smoke logs in with password \"${{ secrets.GITHUB_TOKEN }}\""},
		{"build.yml", "signing key file nobody writes",
			"          printf '%s\\n' \"$SIGNING_KEY\" > \"$RUNNER_TEMP/signing.key\"\n          echo \"SIGN_KEY_FILE=$RUNNER_TEMP/signing.key\" >> \"$GITHUB_ENV\"\n      - name: Build, smoke-test and push by digest\n",
			"          printf '%s\\n' \"$SIGNING_KEY\" > \"$RUNNER_TEMP/signing.key\"\n      - name: Build, smoke-test and push by digest\n",
			"job build passes --sign-key but no step before it writes the key file"},
		{"build.yml", "signing key left behind",
			"      - name: Remove the signing key\n        if: always() && vars.SIGNING_MODE == 'key'\n        run: rm -f \"$RUNNER_TEMP/signing.key\"\n      - name: Record the digest and the SBOM\n",
			"      - name: Record the digest and the SBOM\n",
			"job build passes --sign-key but no later step (if: always()) removes the key file"},
		{"build.yml", "smoke by tag",
			`smoke --image "$IMAGE@$digest"`, `smoke --image "$IMAGE:edge"`,
			"does not smoke-test a digest reference"},
		{"build.yml", "skipped checks pass",
			"          if ! grep -Eq '^[0-9]+ passed, 0 failed, 0 skipped$' \"$RUNNER_TEMP/smoke.txt\"; then\n            echo \"::error::the runc smoke test of $IMAGE@$digest",
			"          if ! grep -Eq '^[0-9]+ passed, 0 failed' \"$RUNNER_TEMP/smoke.txt\"; then\n            echo \"::error::the runc smoke test of $IMAGE@$digest",
			"job smoke does not fail when a check is skipped"},
		{"build.yml", "skipped checks pass a pull request",
			"          if ! grep -Eq '^[0-9]+ passed, 0 failed, 0 skipped$' \"$RUNNER_TEMP/smoke.txt\"; then\n            echo \"::error::the runc smoke test of the $VARIANT $ARCH image",
			"          if ! grep -Eq '^[0-9]+ passed, 0 failed' \"$RUNNER_TEMP/smoke.txt\"; then\n            echo \"::error::the runc smoke test of the $VARIANT $ARCH image",
			"job check does not smoke-test the image it built under runc"},
		{"build.yml", "smoke job can push",
			"      packages: read # pull the pushed digest from ghcr.io\n",
			"      packages: write # pull the pushed digest from ghcr.io\n",
			"job smoke has packages: write but does not push"},
		{"build.yml", "push job moves tags",
			"--push --digest-only --platform", "--push --platform",
			"without --digest-only"},
		// build.yml: attestation
		{"build.yml", "provenance of another digest",
			"      - name: Attest build provenance of the index\n        if: vars.KEYLESS_SKIP_REASON == ''\n        uses: actions/attest-build-provenance@a2bbfa25375fe432b6a289bc6b6cd05ecd0c4c32 # v4.1.0\n        with:\n          subject-name: ${{ steps.index.outputs.image }}\n          subject-digest: ${{ steps.index.outputs.digest }}",
			"      - name: Attest build provenance of the index\n        if: vars.KEYLESS_SKIP_REASON == ''\n        uses: actions/attest-build-provenance@a2bbfa25375fe432b6a289bc6b6cd05ecd0c4c32 # v4.1.0\n        with:\n          subject-name: ${{ steps.index.outputs.image }}\n          subject-digest: ${{ steps.index.outputs.image }}",
			"attests the step output image, not the pushed digest"},
		{"build.yml", "attested index not the file ci manifest's output went to",
			"          name: index-${{ matrix.variant }}\n          path: ${{ runner.temp }}/published/index\n",
			"          name: index-${{ matrix.variant }}\n          path: ${{ runner.temp }}/digests\n",
			"uploads no artifact holding the file its ci manifest step writes"},
		{"build.yml", "ci manifest's output not handed on",
			`          printf '%s\n' "$index" > "$RUNNER_TEMP/published/index"`, `          printf '%s\n' "$TAGS" > "$RUNNER_TEMP/published/index"`,
			"the ci manifest step does not write what ci manifest printed"},
		{"build.yml", "attest reads another artifact",
			"          name: index-${{ matrix.variant }}\n          path: ${{ runner.temp }}/published\n",
			"          name: digest-${{ matrix.variant }}-amd64\n          path: ${{ runner.temp }}/published\n",
			"does not download the artifact index-${{ matrix.variant }}"},
		{"build.yml", "published index taken from another repository",
			`|| "${BASH_REMATCH[1]}" != "$image" ]]; then`, `]]; then`,
			"has no step (with an id) that reads $RUNNER_TEMP/published/index"},
		{"build.yml", "index step never sets the digest",
			`            echo "digest=${BASH_REMATCH[2]}"`, `            echo "sha=${BASH_REMATCH[2]}"`,
			"never sets the output digest"},
		{"build.yml", "attestation not pushed",
			"          subject-digest: ${{ steps.index.outputs.digest }}\n          push-to-registry: true\n      - name: Attest the linux/amd64 SBOM",
			"          subject-digest: ${{ steps.index.outputs.digest }}\n          push-to-registry: false\n      - name: Attest the linux/amd64 SBOM",
			"actions/attest-build-provenance does not push the attestation"},
		{"build.yml", "one SBOM only",
			"      - name: Attest the linux/arm64 SBOM\n        if: vars.KEYLESS_SKIP_REASON == ''\n        uses: actions/attest@59d89421af93a897026c735860bf21b6eb4f7b26 # v4.1.0\n        with:\n          subject-name: ${{ steps.index.outputs.image }}\n          subject-digest: ${{ steps.index.outputs.digest }}\n          sbom-path: ${{ runner.temp }}/sboms/sbom-${{ matrix.variant }}-arm64/arm64.spdx.json\n          push-to-registry: true\n",
			"",
			"attests 1 SBOMs, want one per pushed architecture (2)"},
		{"build.yml", "one variant attested only",
			"          - variant: default\n          - variant: aws-lc\n    runs-on: ubuntu-24.04\n",
			"          - variant: default\n    runs-on: ubuntu-24.04\n",
			"job attest runs for the variants [default], but build pushes [aws-lc default]"},
		{"build.yml", "SBOM artifact shared by the variants",
			"          name: sbom-${{ matrix.variant }}-${{ matrix.arch }}\n          path: ${{ runner.temp }}/sboms/${{ matrix.arch }}.spdx.json",
			"          name: sbom-${{ matrix.arch }}\n          path: ${{ runner.temp }}/sboms/${{ matrix.arch }}.spdx.json",
			"does not upload its SBOM as the artifact sbom-${{ matrix.variant }}-${{ matrix.arch }}"},
		{"build.yml", "no SBOM written",
			`--revision "$REVISION" --output "$RUNNER_TEMP/image-$ARCH"`, `--revision "$REVISION"`,
			"does not write the image's SBOM"},
		{"build.yml", "signing in the job that runs our code",
			"      packages: write # push the index and move the tags\n",
			"      packages: write # push the index and move the tags\n      id-token: write # sign\n",
			"job merge can sign (id-token/attestations: write) and runs project code"},
		{"build.yml", "attest job runs our code",
			"      - name: Check each SBOM describes its pushed digest\n        env:\n          VARIANT: ${{ matrix.variant }}\n        run: |\n",
			"      - name: Check each SBOM describes its pushed digest\n        env:\n          VARIANT: ${{ matrix.variant }}\n        run: |\n          go run ./ci manifest --dry-run --image \"$IMAGE:x\" sha256:0\n",
			"job attest can sign (id-token/attestations: write) and runs project code"},
		{"build.yml", "attest job without artifact-metadata: write (issue 36)",
			"      artifact-metadata: write # the storage record the attest actions create for a pushed attestation (create-storage-record)\n", "",
			"without artifact-metadata: write"},
		{"build.yml", "artifact-metadata: write where nothing attests",
			"      packages: write # push the index and move the tags\n",
			"      packages: write # push the index and move the tags\n      artifact-metadata: write # records\n",
			"job merge has artifact-metadata: write but attests nothing"},
		{"build.yml", "deprecated attest-sbom (issue 36)",
			"      - name: Attest the linux/amd64 SBOM\n        if: vars.KEYLESS_SKIP_REASON == ''\n        uses: actions/attest@59d89421af93a897026c735860bf21b6eb4f7b26 # v4.1.0\n",
			"      - name: Attest the linux/amd64 SBOM\n        if: vars.KEYLESS_SKIP_REASON == ''\n        uses: actions/attest-sbom@c604332985a26aa8cf1bdc465b92731239ec6b9e # v4.1.0\n",
			"uses actions/attest-sbom, deprecated"},
		{"build.yml", "attest job without attestations: write",
			"      attestations: write # store the attestations in the repository's attestation store\n", "",
			"attests without both id-token: write and attestations: write"},
		{"build.yml", "attest before the index exists",
			"    needs: merge\n    name: attest", "    needs: smoke\n    name: attest",
			"does not need the tag-moving job merge"},
		// build.yml: each variant's tags wait for its own legs' pass records
		{"build.yml", "merge does not check the smoke records",
			"            smoked=$(cat \"$RUNNER_TEMP/passed/passed-smoke-$VARIANT-$arch/$arch\" 2> /dev/null || true)\n            if [[ \"$smoked\" != \"$digest\" ]]; then\n              hold \"$VARIANT $arch: the runc smoke test did not pass $digest (its record: '$smoked')\"\n            fi\n",
			"",
			"checks the records [passed-smoke- passed-scan-]"},
		{"build.yml", "smoke pass recorded after a failure",
			"      - uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2\n        with:\n          name: passed-smoke-",
			"      - uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2\n        if: always()\n        with:\n          name: passed-smoke-",
			"job smoke does not record its pass as its last step"},
		{"build.yml", "scan pass records another file",
			"          name: passed-scan-${{ matrix.variant }}-${{ matrix.arch }}\n          path: ${{ runner.temp }}/digests/${{ matrix.arch }}\n",
			"          name: passed-scan-${{ matrix.variant }}-${{ matrix.arch }}\n          path: ${{ runner.temp }}/sboms/${{ matrix.arch }}.spdx.json\n",
			"job scan records \"${{ runner.temp }}/sboms/${{ matrix.arch }}.spdx.json\" as its pass"},
		{"build.yml", "one record for both variants",
			"          name: passed-scan-${{ matrix.variant }}-${{ matrix.arch }}\n",
			"          name: passed-scan-${{ matrix.arch }}\n",
			"not one record per leg"},
		{"build.yml", "merge does not download the scan records",
			"      - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0\n        with:\n          pattern: passed-scan-${{ matrix.variant }}-*\n          path: ${{ runner.temp }}/passed\n",
			"",
			"job merge does not download the records passed-scan-${{ matrix.variant }}-*"},
		{"build.yml", "merge joins digests nobody checked",
			"          DIGESTS: ${{ steps.gates.outputs.digests }}\n", "          DIGESTS: ${{ steps.tags.outputs.tags }}\n",
			"does not take its digests from the step gates that checks the records"},
		// build.yml: every variant, with its own flags and lock, the whole way
		{"build.yml", "variant's tags without its flags",
			`tags=$(go run ./ci tags --ref "$GITHUB_REF" --revision "$GITHUB_SHA" "${variant_flags[@]}")`,
			`tags=$(go run ./ci tags --ref "$GITHUB_REF" --revision "$GITHUB_SHA")`,
			"job merge runs \"tags=$(go run ./ci tags --ref \\\"$GITHUB_REF\\\" --revision \\\"$GITHUB_SHA\\\")\" without the variant's flags"},
		{"build.yml", "variant built from the default lock",
			`--output "$RUNNER_TEMP/image-$ARCH" "${variant_flags[@]}" "${sign_flags[@]}"`, `--output "$RUNNER_TEMP/image-$ARCH" "${sign_flags[@]}"`,
			"without the variant's flags"},
		{"build.yml", "flags not through env",
			"          VARIANT_FLAGS: ${{ matrix.flags }}\n        # --output writes the image as an OCI layout",
			"        # --output writes the image as an OCI layout",
			"job check: step \"Build and smoke-test (no push)\" does not take the variant's flags from env"},
		{"build.yml", "runc smoke test expects the default lock",
			"--expect-lock \"$EXPECT_LOCK\" | tee \"$RUNNER_TEMP/smoke.txt\"\n          # Every check must have run", "--expect-lock pipeline/lock/stack.lock.json | tee \"$RUNNER_TEMP/smoke.txt\"\n          # Every check must have run",
			"job smoke: the runc smoke test does not compare with the variant's lock"},
		{"build.yml", "variant's flags differ between build and merge",
			"          - variant: aws-lc\n            flags: --tls aws-lc --zlib zlib-ng\n    runs-on: ubuntu-24.04\n",
			"          - variant: aws-lc\n            flags: --tls aws-lc\n    runs-on: ubuntu-24.04\n",
			"variant aws-lc has flags \"--tls aws-lc --zlib zlib-ng\" in job build but \"--tls aws-lc\" in job merge"},
		{"build.yml", "variant's lock differs between smoke legs",
			"            lock: pipeline/lock/aws-lc.lock.json\n    runs-on: ${{ matrix.arch == 'arm64' && vars.ARM64_RUNNER || 'ubuntu-24.04' }}\n    timeout-minutes: 20\n",
			"            lock: pipeline/lock/stack.lock.json\n    runs-on: ${{ matrix.arch == 'arm64' && vars.ARM64_RUNNER || 'ubuntu-24.04' }}\n    timeout-minutes: 20\n",
			"variant aws-lc has lock \"pipeline/lock/aws-lc.lock.json\" in job check but \"pipeline/lock/stack.lock.json\" in job smoke"},
		{"build.yml", "pull requests skip a variant leg",
			"          - variant: aws-lc\n            arch: arm64\n            flags: --tls aws-lc --zlib zlib-ng\n            lock: pipeline/lock/aws-lc.lock.json\n    runs-on: ${{ matrix.arch == 'arm64' && vars.ARM64_RUNNER || 'ubuntu-24.04' }}\n    timeout-minutes: 60\n    steps:",
			"    runs-on: ${{ matrix.arch == 'arm64' && vars.ARM64_RUNNER || 'ubuntu-24.04' }}\n    timeout-minutes: 60\n    steps:",
			"job check builds the legs (variant/architecture) [aws-lc/amd64 default/amd64 default/arm64]"},
		{"build.yml", "matrix value expanded into a script",
			`go run ./ci build --platform "$PLATFORM" --image "$IMAGE" --output "$RUNNER_TEMP/image-$ARCH" "${variant_flags[@]}"`,
			`go run ./ci build --platform "$PLATFORM" --image "$IMAGE" --output "$RUNNER_TEMP/image-$ARCH" ${{ matrix.flags }}`,
			`step "Build and smoke-test (no push)" puts ${{ }} into its run: script`},
		// build.yml: the vulnerability gate and keyless signing
		{"build.yml", "tags move without waiting for the scan",
			"    needs: [build, smoke, scan]\n", "    needs: [build, smoke]\n",
			"does not need the vulnerability gate scan"},
		{"build.yml", "scan misses a leg",
			"          - variant: aws-lc\n            arch: arm64\n    runs-on: ubuntu-24.04\n    timeout-minutes: 15",
			"    runs-on: ubuntu-24.04\n    timeout-minutes: 15",
			"job scan scans the legs (variant/architecture) [aws-lc/amd64 default/amd64 default/arm64]"},
		{"build.yml", "scanner ignores the reviewed overrides",
			"          config: .github/vuln-allow.yaml\n          output-format: json\n          # In the job's own", "          output-format: json\n          # In the job's own",
			"job scan: the scanner's config is \"\", not the reviewed override file"},
		{"build.yml", "pull request's scanner ignores the reviewed overrides",
			"          config: .github/vuln-allow.yaml\n          output-format: json\n          output-file:", "          output-format: json\n          output-file:",
			"job check: the scanner does not read the built image's SBOM with the reviewed override file"},
		{"build.yml", "gate lets fixable criticals through",
			"            exit 1\n          fi\n      # The pass record merge checks: the digest whose SBOM",
			"          fi\n      # The pass record merge checks: the digest whose SBOM",
			"the gate does not fail on fixable critical findings"},
		{"build.yml", "gate runs our code",
			"      - name: Check the SBOM describes the pushed digest\n        env:\n          ARCH: ${{ matrix.arch }}\n          VARIANT: ${{ matrix.variant }}\n        run: |\n",
			"      - name: Check the SBOM describes the pushed digest\n        env:\n          ARCH: ${{ matrix.arch }}\n          VARIANT: ${{ matrix.variant }}\n        run: |\n          go run ./ci smoke --help\n",
			"job scan runs project code"},
		{"build.yml", "signing a tag",
			`cosign sign --yes "$IMAGE@$DIGEST"`, `cosign sign --yes "$IMAGE:latest"`,
			"does not sign the pushed index by digest"},
		{"build.yml", "signing another digest",
			"          IMAGE: ${{ steps.index.outputs.image }}\n          DIGEST: ${{ steps.index.outputs.digest }}\n          VARIANT: ${{ matrix.variant }}\n        run: |\n          # By digest",
			"          IMAGE: ${{ steps.index.outputs.image }}\n          DIGEST: ${{ steps.index.outputs.index }}\n          VARIANT: ${{ matrix.variant }}\n        run: |\n          # By digest",
			`DIGEST is "${{ steps.index.outputs.index }}"`},
		{"build.yml", "cosign not from the pinned installer",
			"      - name: Install cosign\n        if: vars.KEYLESS_SKIP_REASON == ''\n        uses: sigstore/cosign-installer@6f9f17788090df1f26f669e9d70d6ae9567deba6 # v4.1.2\n        with:\n          cosign-release: v3.0.6\n", "",
			"signs without installing cosign"},
		{"build.yml", "signing in the scan job",
			"    permissions:\n      contents: read\n    steps:\n      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2\n        with:\n          persist-credentials: false\n          sparse-checkout",
			"    permissions:\n      contents: read\n      id-token: write # sign\n    steps:\n      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2\n        with:\n          persist-credentials: false\n          sparse-checkout",
			"job scan has id-token or attestations: write but attests nothing"},
		{"build.yml", "keyless skip skips more",
			"      - name: Check each SBOM describes its pushed digest\n        env:",
			"      - name: Check each SBOM describes its pushed digest\n        if: vars.KEYLESS_SKIP_REASON == ''\n        env:",
			"does not need GitHub's OIDC token, yet KEYLESS_SKIP_REASON skips it"},
		{"build.yml", "keyless step not skippable",
			"      - name: Attest the linux/arm64 SBOM\n        if: vars.KEYLESS_SKIP_REASON == ''\n",
			"      - name: Attest the linux/arm64 SBOM\n",
			"needs GitHub's OIDC token but KEYLESS_SKIP_REASON does not skip it"},
		{"build.yml", "keyless skip silent",
			"          echo \"::warning::$VARIANT: the index is published without its keyless signature",
			"          echo \"$VARIANT: the index is published without its keyless signature",
			"0 steps say why the keyless steps are skipped"},
		{"build.yml", "write-all",
			"    permissions:\n      contents: read # as GitHub's documented set for attesting images; nothing here checks out\n      id-token: write # mint the OIDC token that Sigstore certifies the signatures with (cosign, attest actions)\n      attestations: write # store the attestations in the repository's attestation store\n      packages: write # push the signature and attestations to ghcr.io next to the index (push-to-registry)\n      artifact-metadata: write # the storage record the attest actions create for a pushed attestation (create-storage-record)\n",
			"    permissions: write-all\n",
			"job attest sets permissions for every scope at once"},
	}
	for _, c := range cases {
		t.Run(c.file+"/"+c.name, func(t *testing.T) {
			text := readWorkflow(t, c.file)
			if n := strings.Count(text, c.old); n != 1 {
				t.Fatalf("the text to break occurs %d times in %s (want once): %q", n, c.file, c.old)
			}
			probs, err := problemsOf(c.file, strings.Replace(text, c.old, c.new, 1))
			if err != nil {
				t.Fatalf("broken copy does not parse: %v", err)
			}
			for _, p := range probs {
				if strings.Contains(p, c.want) {
					return
				}
			}
			t.Errorf("no problem mentions %q; found:\n%s", c.want, strings.Join(probs, "\n"))
		})
	}
}
