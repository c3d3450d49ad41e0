//go:build sbx_gvisor_precompile

package main

import (
	"reflect"
	"testing"

	"gvisor.dev/gvisor/pkg/bpf"
	"gvisor.dev/gvisor/pkg/seccomp"
	"gvisor.dev/gvisor/pkg/seccomp/precompiledseccomp"
	"gvisor.dev/gvisor/pkg/sentry/platform"
	sentryfilter "gvisor.dev/gvisor/runsc/boot/filter"
	sentryconfig "gvisor.dev/gvisor/runsc/boot/filter/config"
	goferfilter "gvisor.dev/gvisor/runsc/fsgofer/filter"
	goferconfig "gvisor.dev/gvisor/runsc/fsgofer/filter/config"
)

// Run by scripts/build-runsc.sh once filter_precompiled.go is generated: a
// precompiled program rendered with this process's variables must be the
// program runsc would compile from its rules here, instruction for
// instruction. A rule that reads a runtime value (a PID, an FD) other than
// through a variable would otherwise carry the generator's value.

// TestSentryPrecompiledMatchesCompiled covers every platform, with netstack
// and host networking, directfs on and off (no device proxies).
func TestSentryPrecompiledMatchesCompiled(t *testing.T) {
	for _, name := range platform.List() {
		ctor, err := platform.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range ctor.PrecompiledSeccompInfo() {
			for _, hostNet := range [][2]bool{{false, false}, {true, false}, {true, true}} {
				for _, directfs := range []bool{true, false} {
					opt := sentryfilter.Options{Platform: info, HostNetwork: hostNet[0], HostNetworkRawSockets: hostNet[1],
						HostFilesystem: directfs, ControllerFD: 11}
					rules, deny := sentryconfig.Rules(opt)
					want := build(t, rules, deny, sentryconfig.SeccompOptions(opt))
					p, ok := sentryfilter.GetPrecompiled(opt.ConfigKey())
					check(t, opt.ConfigKey(), p, ok, opt.Vars(), want)
				}
			}
		}
	}
}

// TestGoferPrecompiledMatchesCompiled covers the gofer's variants.
func TestGoferPrecompiledMatchesCompiled(t *testing.T) {
	for i := 0; i < 32; i++ {
		opt := goferfilter.Options{UDSOpenEnabled: i&1 != 0, UDSCreateEnabled: i&2 != 0, CgoEnabled: i&4 != 0,
			DirectFS: i&8 != 0, LisafsNeeded: i&16 != 0}
		rules, deny := goferconfig.Rules(opt)
		want := build(t, rules, deny, seccomp.ProgramOptions{})
		p, ok := goferfilter.GetPrecompiled(opt.ConfigKey())
		check(t, opt.ConfigKey(), p, ok, opt.Vars(), want)
	}
}

func build(t *testing.T, rules, deny seccomp.SyscallRules, o seccomp.ProgramOptions) []bpf.Instruction {
	t.Helper()
	prog := &seccomp.Program{RuleSets: []seccomp.RuleSet{{Rules: deny}, {Rules: rules, Action: seccomp.Allow}}, Options: o}
	insns, _, err := prog.Build()
	if err != nil {
		t.Fatal(err)
	}
	return insns
}

func check(t *testing.T, key string, p precompiledseccomp.Program, ok bool, vars precompiledseccomp.Values, want []bpf.Instruction) {
	t.Helper()
	if !ok {
		t.Errorf("%s: not precompiled", key)
		return
	}
	got, err := p.RenderInstructions(vars)
	if err != nil {
		t.Errorf("%s: %v", key, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("%s: instruction %d of %d: precompiled %+v, compiled %+v", key, i, len(want), got[i], want[i])
				return
			}
		}
		t.Errorf("%s: precompiled %d instructions, compiled %d", key, len(got), len(want))
	}
}
