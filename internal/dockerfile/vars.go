package dockerfile

import (
	"fmt"
	"sort"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// vars is an expansion environment (ARG and ENV values in scope); it is
// buildkit's shell.EnvGetter.
type vars struct {
	keys []string
	vals map[string]string
}

func newVars() *vars { return &vars{vals: map[string]string{}} }

// Get implements shell.EnvGetter.
func (v *vars) Get(k string) (string, bool) {
	val, ok := v.vals[k]
	return val, ok
}

// Keys implements shell.EnvGetter.
func (v *vars) Keys() []string { return v.keys }

func (v *vars) set(k, val string) {
	if _, ok := v.vals[k]; !ok {
		v.keys = append(v.keys, k)
	}
	v.vals[k] = val
}

// expander returns the buildkit word expander over env.
func expander(lex *shell.Lex, env *vars) instructions.SingleWordExpander {
	return func(word string) (string, error) {
		s, _, err := lex.ProcessWord(word, env)
		return s, err
	}
}

// args resolves ARG instructions: a --build-arg wins over the default, and
// a stage ARG without default takes the value of the global ARG of the same
// name, as in Docker.
type args struct {
	given map[string]string
	used  map[string]bool
}

// resolve returns the value of ARG kv, if it has one.
func (a *args) resolve(kv instructions.KeyValuePairOptional, global *vars) (string, bool) {
	if v, ok := a.given[kv.Key]; ok {
		a.used[kv.Key] = true
		return v, true
	}
	if kv.Value != nil {
		return *kv.Value, true
	}
	return global.Get(kv.Key)
}

// unused returns a warning naming the build args no ARG declared.
func (a *args) unused() []string {
	var names []string
	for k := range a.given {
		if !a.used[k] {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return []string{fmt.Sprintf("build args not declared by any ARG: %v", names)}
}
