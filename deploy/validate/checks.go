package validate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Check asserts what sbx's deployment relies on: one node DaemonSet and
// one API Deployment (check returns every broken rule, joined).
func Check(objs Objects) error {
	var errs []error
	secrets := secretKeys(objs)
	var daemonSets []*appsv1.DaemonSet
	var deployments []*appsv1.Deployment
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			daemonSets = append(daemonSets, o)
			errs = append(errs, checkPod("DaemonSet "+o.Name, &o.Spec.Template.Spec, secrets)...)
		case *appsv1.Deployment:
			deployments = append(deployments, o)
			errs = append(errs, checkPod("Deployment "+o.Name, &o.Spec.Template.Spec, secrets)...)
		case *appsv1.StatefulSet:
			errs = append(errs, checkPod("StatefulSet "+o.Name, &o.Spec.Template.Spec, secrets)...)
		}
	}
	if len(daemonSets) != 1 || len(deployments) != 1 {
		return fmt.Errorf("want one DaemonSet and one Deployment, have %d and %d", len(daemonSets), len(deployments))
	}
	errs = append(errs, checkNode(daemonSets[0])...)
	errs = append(errs, checkAPI(deployments[0], services(objs))...)
	return errors.Join(errs...)
}

// secretKeys maps each Secret's name to its keys (data and stringData).
func secretKeys(objs Objects) map[string][]string {
	m := map[string][]string{}
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok {
			keys := []string{}
			for k := range s.Data {
				keys = append(keys, k)
			}
			for k := range s.StringData {
				keys = append(keys, k)
			}
			m[s.Name] = keys
		}
	}
	return m
}

func services(objs Objects) []*corev1.Service {
	var out []*corev1.Service
	for _, o := range objs {
		if s, ok := o.(*corev1.Service); ok {
			out = append(out, s)
		}
	}
	return out
}

// checkPod checks every container of a pod: each Secret reference
// resolves to a rendered Secret and key, images are pinned, requests set.
func checkPod(where string, p *corev1.PodSpec, secrets map[string][]string) []error {
	var errs []error
	ref := func(what, name, key string) {
		keys, ok := secrets[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: %s: Secret %q is not rendered", where, what, name))
		case key != "" && !slices.Contains(keys, key):
			errs = append(errs, fmt.Errorf("%s: %s: Secret %q has no key %q", where, what, name, key))
		}
	}
	for i, c := range slices.Concat(p.InitContainers, p.Containers) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				ref("env "+e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				ref("envFrom", e.SecretRef.Name, "")
			}
		}
		if err := pinned(c.Image); err != nil {
			errs = append(errs, fmt.Errorf("%s: container %s: %w", where, c.Name, err))
		}
		if i >= len(p.InitContainers) && len(c.Resources.Requests) == 0 {
			errs = append(errs, fmt.Errorf("%s: container %s: no resource requests", where, c.Name))
		}
	}
	for _, v := range p.Volumes {
		if v.Secret == nil {
			continue
		}
		ref("volume "+v.Name, v.Secret.SecretName, "")
		for _, it := range v.Secret.Items {
			ref("volume "+v.Name, v.Secret.SecretName, it.Key)
		}
	}
	return errs
}

// pinned refuses an image without a tag or digest, or tagged latest.
func pinned(image string) error {
	if strings.Contains(image, "@sha256:") {
		return nil
	}
	name := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(name, ":")
	switch {
	case i < 0:
		return fmt.Errorf("image %q has no tag", image)
	case name[i+1:] == "latest":
		return fmt.Errorf("image %q is tagged latest", image)
	}
	return nil
}
