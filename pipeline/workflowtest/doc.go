// Package workflowtest runs .github/workflows/*.yml with nektos/act on this machine (host
// mode, offline), each pinned action from a local copy, against loopback stand-ins, and
// checks what the runs leave behind. Its tests are under the build tag "workflows"
// (.ci/test runs them; docs/tests.md).
package workflowtest
