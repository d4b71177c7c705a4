package upstream_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// A recorded PGO profile is trained on the lock's sources and builder: an update that
// replaces either removes it (and the pull request body says to record a new one); an
// update of the runtime image alone keeps it.
func TestUpdateDropsStaleProfiles(t *testing.T) {
	for _, only := range []string{"components", "builder", "runtime"} {
		s := upstreamtest.NewScenario(t)
		l, err := lock.Load(s.LockFile)
		if err != nil {
			t.Fatal(err)
		}
		prof := lock.Profile{Platform: "linux/amd64", Training: strings.Repeat("7c", 32), URL: "https://pgo.example.org/p.tar.gz", SHA256: strings.Repeat("3d", 32)}
		l.SetProfile(prof)
		if err := l.Write(s.LockFile); err != nil {
			t.Fatal(err)
		}
		rep := check(t, s)
		for i := range rep.Components {
			rep.Components[i].Update = rep.Components[i].Update && only == "components"
		}
		for i := range rep.Images {
			rep.Images[i].Update = rep.Images[i].Update && rep.Images[i].Role == only
		}
		f, _ := fetcher(t, s)
		applied, err := updater(s, f).UpdateFile(context.Background(), s.LockFile, rep)
		if err != nil {
			t.Fatalf("UpdateFile: %v", err)
		}
		after, err := lock.Load(s.LockFile)
		if err != nil {
			t.Fatal(err)
		}
		var dropped []upstream.Applied
		for _, a := range applied {
			if a.DroppedProfile != "" {
				dropped = append(dropped, a)
			}
		}
		body := upstream.PRBody(applied, nil, nil)
		if only == "runtime" {
			if len(after.Profiles) != 1 || len(dropped) != 0 || strings.Contains(body, "PGO profiles") {
				t.Errorf("runtime image update: profiles %+v, dropped %+v", after.Profiles, dropped)
			}
			continue
		}
		if len(after.Profiles) != 0 || len(dropped) != 1 || dropped[0].DroppedProfile != "linux/amd64" || dropped[0].Old != prof.Training {
			t.Errorf("%s update: profiles left %+v, dropped %+v", only, after.Profiles, dropped)
		}
		if !strings.Contains(body, "### PGO profiles") || !strings.Contains(body, "linux/amd64 (training 7c7c7c7c7c7c)") || strings.Contains(body, "### PGO profile linux/amd64") {
			t.Errorf("the pull request body does not list the dropped profile once, in its own section:\n%s", body)
		}
	}
}
