package actions

// Rules that keep build.yml fitting the repository it runs in (docs/github-setup.md): the
// pull request runs the gates that protect main, arm64 runs natively only where a variable
// says an arm64 runner exists, every registry login takes its credentials from variables
// and secrets, and a signing key comes from a secret into a file a step writes and removes.

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rhysd/actionlint"
)

// armRunsOn is the runs-on of every per-architecture job that runs the image: the arm64
// legs on the runner ARM64_RUNNER names, else (and every amd64 leg) on ubuntu-24.04.
const armRunsOn = "${{ matrix.arch == 'arm64' && vars.ARM64_RUNNER || 'ubuntu-24.04' }}"

// armStep is the step that says where an arm64 leg runs and sets up emulation without an
// arm64 runner.
const armStep = "arm64 runner or emulation"

// gateStep is the vulnerability gate's step, in the scan job and the pull request's check.
const gateStep = "Gate on fixable critical findings"

// forkProblems: see the top of this file.
func forkProblems(w *actionlint.Workflow) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, "build.yml: "+fmt.Sprintf(format, a...)) }

	// arm64: every job with arm64 legs that builds or runs the image runs on armRunsOn and,
	// before that, has the step that checks or sets up emulation for the arm64 legs.
	for id, j := range w.Jobs {
		if !strings.Contains(strings.Join(arches(j), ","), "arm64") {
			continue
		}
		runsImage := -1
		for i, s := range j.Steps {
			if r := runOf(s); strings.Contains(r, "./ci build") || strings.Contains(r, "smoke --image") {
				runsImage = i
				break
			}
		}
		if runsImage < 0 {
			continue // the scan job reads an SBOM: any runner
		}
		if j.RunsOn == nil || j.RunsOn.LabelsExpr == nil || strings.TrimSpace(j.RunsOn.LabelsExpr.Value) != armRunsOn {
			got := ""
			if j.RunsOn != nil && j.RunsOn.LabelsExpr != nil {
				got = j.RunsOn.LabelsExpr.Value
			} else if j.RunsOn != nil {
				for _, l := range j.RunsOn.Labels {
					got += l.Value
				}
			}
			add("job %s runs its legs on %q, not %s (arm64 on the runner ARM64_RUNNER names, else emulated on amd64)", id, got, armRunsOn)
		}
		emulates := false
		for _, s := range j.Steps[:runsImage] {
			if stepName(s) != armStep {
				continue
			}
			r := runOf(s)
			emulates = s.If != nil && strings.Contains(s.If.Value, "matrix.arch == 'arm64'") &&
				envOf(s)["arm64_runner"] == "${{ vars.ARM64_RUNNER }}" &&
				strings.Contains(r, "qemu-aarch64") && strings.Contains(r, "exit 1") && strings.Contains(r, "GITHUB_STEP_SUMMARY")
		}
		if !emulates {
			add("job %s has no step %q before it builds or runs the image that, for arm64 legs, checks the qemu-aarch64 emulation when ARM64_RUNNER is unset (exit 1 without it) and says in the summary where the leg ran", id, armStep)
		}
	}

	// The pull request's gates: the job that runs on pull requests builds without pushing,
	// smoke-tests what it built under runc (every check run) and scans its SBOM with the
	// scan job's own gate; it holds no permission of its own and no secret.
	var prIDs []string
	for id, j := range w.Jobs {
		if j.If != nil && strings.Contains(j.If.Value, "== 'pull_request'") {
			prIDs = append(prIDs, id)
		}
	}
	if len(prIDs) != 1 {
		add("want exactly one pull-request job (if: ... == 'pull_request'), found %v", prIDs)
		return out
	}
	prID := prIDs[0]
	pr := w.Jobs[prID]
	var built, smoked, scanned bool
	var prGate string
	for _, s := range pr.Steps {
		r := runOf(s)
		if strings.Contains(r, "./ci build") && strings.Contains(r, `--output "$RUNNER_TEMP/image-$ARCH"`) {
			built = true
		}
		if line := regexp.MustCompile(`(?m)^.*smoke --image.*$`).FindString(r); line != "" {
			smoked = regexp.MustCompile(`^\s*sudo\s`).MatchString(line) && strings.Contains(line, `"oci:$RUNNER_TEMP/image-$ARCH"`) && strings.Contains(r, "0 skipped")
			if !smoked {
				add("job %s does not smoke-test the image it built under runc, as root, failing on a skipped check (sudo ... smoke --image \"oci:$RUNNER_TEMP/image-$ARCH\", 0 skipped): %q", prID, strings.TrimSpace(line))
			}
		}
		if actionOf(s) == "anchore/scan-action" {
			scanned = strings.Contains(inputOf(s, "sbom"), "sboms/${{ matrix.arch }}.spdx.json") && inputOf(s, "config") == vulnAllowFile && inputOf(s, "output-format") == "json"
			if !scanned {
				add("job %s: the scanner does not read the built image's SBOM with the reviewed override file %s and a JSON report", prID, vulnAllowFile)
			}
		}
		if stepName(s) == gateStep {
			prGate = r
		}
	}
	if !built {
		add("job %s does not build the image into $RUNNER_TEMP/image-$ARCH (ci build --output) for its runc smoke test and scan", prID)
	}
	if !smoked {
		add("job %s runs no runc smoke test of what it built: a required check would pass a pull request main's gates refuse", prID)
	}
	if !scanned {
		add("job %s runs no vulnerability scan of what it built: a required check would pass a pull request main's gates refuse", prID)
	}
	scanIDs := pushJobsWhere(w, usesAction("anchore/scan-action"))
	if len(scanIDs) == 1 {
		pushGate := ""
		for _, s := range w.Jobs[scanIDs[0]].Steps {
			if stepName(s) == gateStep {
				pushGate = runOf(s)
			}
		}
		if prGate == "" || prGate != pushGate {
			add("job %s's step %q is not the scan job's %s step, word for word: the gate a pull request passes must be the one main's release passes", prID, gateStep, scanIDs[0])
		}
	}
	for _, s := range pr.Steps {
		if actionOf(s) == "docker/login-action" {
			add("job %s logs in to a registry: a pull request gets no registry credentials", prID)
		}
		for k, v := range envOf(s) {
			if strings.Contains(v, "secrets.") {
				add("job %s: step %q reads a secret (%s): a pull request's code gets none", prID, stepName(s), k)
			}
		}
	}

	// Registry logins: the registry, user name and password from variables and secrets.
	for id, j := range w.Jobs {
		for _, s := range j.Steps {
			if actionOf(s) != "docker/login-action" {
				continue
			}
			for in, want := range map[string]string{
				"registry": "${{ env.REGISTRY }}",
				"username": "${{ vars.REGISTRY_USERNAME || github.actor }}",
				"password": "${{ secrets.REGISTRY_PASSWORD || secrets.GITHUB_TOKEN }}",
			} {
				if got := inputOf(s, in); got != want {
					add("job %s logs in with %s %q, want %q (docs/github-setup.md: another registry needs no workflow edit)", id, in, got, want)
				}
			}
		}
	}

	// A key file a step names is one a step of the same job writes (from the secret) and a
	// later one removes whatever happened.
	for id, j := range w.Jobs {
		writes, removes, uses := -1, -1, -1
		for i, s := range j.Steps {
			r := runOf(s)
			if strings.Contains(r, "SIGN_KEY_FILE=") && envOf(s)["signing_key"] == "${{ secrets.COSIGN_PRIVATE_KEY }}" && strings.Contains(r, "umask 077") {
				writes = i
			}
			if strings.Contains(r, "--sign-key") && uses < 0 {
				uses = i
			}
			if strings.Contains(r, "rm -f") && strings.Contains(r, "signing.key") && s.If != nil && strings.Contains(s.If.Value, "always()") {
				removes = i
			}
		}
		if uses < 0 {
			continue
		}
		if writes < 0 || writes > uses {
			add("job %s passes --sign-key but no step before it writes the key file from the secret COSIGN_PRIVATE_KEY (umask 077, SIGN_KEY_FILE)", id)
		}
		if removes < uses {
			add("job %s passes --sign-key but no later step (if: always()) removes the key file", id)
		}
	}
	return out
}
