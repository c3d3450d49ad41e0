// Package validate checks the Kubernetes objects of deploy/ offline: every
// document decoded strictly (unknown or duplicate fields fail) into its
// Kubernetes API type, then the contracts sbx's deployment relies on.
package validate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// scheme knows the API groups deploy/ may use; any other kind is an error.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// Objects is a decoded set of manifests.
type Objects []runtime.Object

// Decode splits a multi-document YAML stream and decodes each non-empty
// document strictly into the Go type of its apiVersion and kind.
func Decode(stream []byte) (Objects, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var objs Objects
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		obj, err := decodeOne(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
}

// decodeOne decodes one document; a document of only comments is nil.
func decodeOne(doc []byte) (runtime.Object, error) {
	var generic map[string]any
	if err := yaml.Unmarshal(doc, &generic); err != nil {
		return nil, err
	}
	if len(generic) == 0 {
		return nil, nil
	}
	av, _ := generic["apiVersion"].(string)
	kind, _ := generic["kind"].(string)
	gv, err := schema.ParseGroupVersion(av)
	if err != nil || kind == "" {
		return nil, fmt.Errorf("apiVersion %q kind %q: %v", av, kind, err)
	}
	obj, err := scheme.New(gv.WithKind(kind))
	if err != nil {
		return nil, fmt.Errorf("%s %s: not a kind deploy/ may use: %w", av, kind, err)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", av, kind, err)
	}
	return obj, nil
}
