package lock

import (
	"reflect"
	"testing"
)

// TestModulesLockIsTheTwinPlusModules: the module catalogue's test lock
// (testdata/modules.lock.json) is the default lock's test twin plus module components:
// every core component, the images and source_date_epoch as the twin has them, so its build
// is the twin's build with modules (the zlib, PCRE2 and OpenSSL stages are the twin's, from
// the build cache) and moves with the twin. Its extra components are all optional.
func TestModulesLockIsTheTwinPlusModules(t *testing.T) {
	twin, err := Load("testdata/stack.twin.lock.json")
	if err != nil {
		t.Fatal(err)
	}
	mods, err := Load("testdata/modules.lock.json")
	if err != nil {
		t.Fatal(err)
	}
	if mods.SourceDateEpoch != twin.SourceDateEpoch || !reflect.DeepEqual(mods.Images, twin.Images) {
		t.Errorf("modules.lock.json: source_date_epoch %d and images %+v, the twin's %d and %+v", mods.SourceDateEpoch, mods.Images, twin.SourceDateEpoch, twin.Images)
	}
	for _, c := range twin.Components {
		if m, ok := mods.Component(c.Name); !ok || !reflect.DeepEqual(m, c) {
			t.Errorf("modules.lock.json's %s is not the twin's (%s %s): update it with the twin", c.Name, c.Version, c.Pin())
		}
	}
	for _, c := range mods.Components {
		if _, inTwin := twin.Component(c.Name); !inTwin {
			if spec, _ := SpecOf(c.Name); !spec.Optional {
				t.Errorf("modules.lock.json has %s, which the twin lacks and which is no module's component", c.Name)
			}
		}
	}
}
