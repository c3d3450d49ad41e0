package validate

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// sbxContainer is the pod's container named sbx.
func sbxContainer(p *corev1.PodSpec) *corev1.Container {
	for i := range p.Containers {
		if p.Containers[i].Name == "sbx" {
			return &p.Containers[i]
		}
	}
	return nil
}

// checkNode: the node daemon serves, takes --cluster from a Secret (by
// $SBX_CLUSTER_URL, or --cluster=$(VAR) of a Secret env), advertises its
// pod IP from the downward API, stays off the host network, and is probed
// on /health.
func checkNode(ds *appsv1.DaemonSet) []error {
	where := "DaemonSet " + ds.Name
	c := sbxContainer(&ds.Spec.Template.Spec)
	if c == nil {
		return []error{fmt.Errorf("%s: no container named sbx", where)}
	}
	errs := checkSbx(where, c)
	if ds.Spec.Template.Spec.HostNetwork {
		errs = append(errs, fmt.Errorf("%s: hostNetwork (sbx keeps its links and nftables in the pod's netns)", where))
	}
	if arg(c.Args, "--role") != "" && arg(c.Args, "--role") != "node" {
		errs = append(errs, fmt.Errorf("%s: --role %q, want node", where, arg(c.Args, "--role")))
	}
	adv := arg(c.Args, "--advertise")
	ip, ok := envFrom(c, "POD_IP")
	if !strings.Contains(adv, "$(POD_IP)") || !ok || ip.FieldRef == nil || ip.FieldRef.FieldPath != "status.podIP" {
		errs = append(errs, fmt.Errorf("%s: --advertise %q is not the pod IP of the downward API", where, adv))
	}
	if dir := arg(c.Args, "--shared-dir"); dir != "" && !sharedVolumeAt(&ds.Spec.Template.Spec, c, dir) {
		errs = append(errs, fmt.Errorf("%s: --shared-dir %s is not a PersistentVolumeClaim mounted there (every node must see the same storage)", where, dir))
	}
	return errs
}

// sharedVolumeAt reports whether c mounts, at path, a volume of the pod
// backed by a PersistentVolumeClaim (not the node's own disk).
func sharedVolumeAt(p *corev1.PodSpec, c *corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for _, v := range p.Volumes {
			if v.Name == m.Name && v.PersistentVolumeClaim != nil {
				return true
			}
		}
	}
	return false
}

// checkAPI: the front runs --role api, takes --cluster from a Secret, is
// probed on /health, and a Service selects its pods on a named port.
func checkAPI(d *appsv1.Deployment, svcs []*corev1.Service) []error {
	where := "Deployment " + d.Name
	c := sbxContainer(&d.Spec.Template.Spec)
	if c == nil {
		return []error{fmt.Errorf("%s: no container named sbx", where)}
	}
	errs := checkSbx(where, c)
	if arg(c.Args, "--role") != "api" {
		errs = append(errs, fmt.Errorf("%s: --role %q, want api", where, arg(c.Args, "--role")))
	}
	podLabels := labels.Set(d.Spec.Template.Labels)
	for _, s := range svcs {
		if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
			for _, p := range s.Spec.Ports {
				if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.TargetPort.String() }) {
					errs = append(errs, fmt.Errorf("service %s: targetPort %s is no port of the front", s.Name, p.TargetPort.String()))
				}
			}
			return errs
		}
	}
	return append(errs, fmt.Errorf("%s: no Service selects its pods", where))
}

// checkSbx: the cluster URL from a Secret (never literal in args), and
// readiness and liveness probes on /health at a port of the container.
func checkSbx(where string, c *corev1.Container) []error {
	var errs []error
	if !clusterFromSecret(c) {
		errs = append(errs, fmt.Errorf("%s: the cluster URL (--cluster / SBX_CLUSTER_URL) does not come from a Secret", where))
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.Contains(a, "postgres://") }) {
		errs = append(errs, fmt.Errorf("%s: a postgres:// URL in args (visible in ps)", where))
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" {
			errs = append(errs, fmt.Errorf("%s: %s probe is not GET /health", where, name))
			continue
		}
		port := p.HTTPGet.Port.String()
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == port || fmt.Sprint(cp.ContainerPort) == port }) {
			errs = append(errs, fmt.Errorf("%s: %s probe port %s is no port of the container", where, name, port))
		}
	}
	return errs
}

// clusterFromSecret: --cluster=$(VAR) or no --cluster and SBX_CLUSTER_URL,
// VAR or SBX_CLUSTER_URL being a Secret key reference.
func clusterFromSecret(c *corev1.Container) bool {
	name := "SBX_CLUSTER_URL"
	if v := arg(c.Args, "--cluster"); v != "" {
		if !strings.HasPrefix(v, "$(") || !strings.HasSuffix(v, ")") {
			return false
		}
		name = v[2 : len(v)-1]
	}
	src, ok := envFrom(c, name)
	return ok && src.SecretKeyRef != nil
}

// envFrom is the valueFrom of the container's env var name.
func envFrom(c *corev1.Container, name string) (*corev1.EnvVarSource, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil {
			return e.ValueFrom, true
		}
	}
	return nil, false
}

// arg is the value of flag in args (--flag=v or --flag v, - or --), or "".
func arg(args []string, flag string) string {
	short := strings.TrimPrefix(flag, "-")
	for i, a := range args {
		for _, f := range []string{flag, short} {
			if v, ok := strings.CutPrefix(a, f+"="); ok {
				return v
			}
			if a == f && i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}
