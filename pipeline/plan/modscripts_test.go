package plan

import (
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// TestModulesHaveScripts: every module of the component table has the nginx stage's setup
// lines, and every library it requires a stage script, so a row added to the table without
// its build code fails here instead of planning an empty stage. The planted names prove the
// lookups say so.
func TestModulesHaveScripts(t *testing.T) {
	for _, m := range thirdPartyModules() {
		if moduleSetup(m.Components[0]) == "" {
			t.Errorf("module %s (component %s) has no setup lines (moduleSetup)", m.Name, m.Components[0])
		}
		for _, lib := range m.Components[1:] {
			if moduleLibraryScript(lib) == "" {
				t.Errorf("module %s's library %s has no stage script (moduleLibraryScript)", m.Name, lib)
			}
		}
	}
	if len(thirdPartyModules()) == 0 {
		t.Error("the component table has no modules: is lock.Specs read?")
	}
	if moduleSetup("headers_more") != "" || moduleLibraryScript(lock.Nginx) != "" {
		t.Error("a component without build code was given some")
	}
}
