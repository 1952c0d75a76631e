package check

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

func findService(tr *tree, name string) *corev1.Service {
	for _, s := range tr.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func findIngress(tr *tree, name string) *networkingv1.Ingress {
	for _, i := range tr.ingresses {
		if i.Name == name {
			return i
		}
	}
	return nil
}

// findConfigMap and findSecret match generated names too (name plus content hash).
func findConfigMap(tr *tree, name string) *corev1.ConfigMap {
	for _, c := range tr.configMaps {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func findSecret(tr *tree, name string) *corev1.Secret {
	for _, s := range tr.secrets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// secret is the one application Secret; kustomize has renamed it with a content hash and
// updated the references, which findSecret then follows.
func secret(t *testing.T, tr *tree) *corev1.Secret {
	t.Helper()
	for _, s := range tr.secrets {
		if strings.HasPrefix(s.Name, "apistack-secrets") {
			return s
		}
	}
	t.Fatalf("%s: no apistack-secrets Secret", tr.name)
	return nil
}

func secretValue(s *corev1.Secret, key string) string {
	if v, ok := s.Data[key]; ok {
		return string(v)
	}
	return s.StringData[key]
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// containerHasPort: port is a container port's name or number.
func containerHasPort(c corev1.Container, port string) bool {
	for _, p := range c.Ports {
		if p.Name == port || port == strconv.Itoa(int(p.ContainerPort)) {
			return true
		}
	}
	return false
}

func serviceHasPort(s *corev1.Service, port networkingv1.ServiceBackendPort) bool {
	for _, p := range s.Spec.Ports {
		if (port.Name != "" && p.Name == port.Name) || (port.Number != 0 && p.Port == port.Number) {
			return true
		}
	}
	return false
}

// selects: every selector label is on the pod (and the selector is not empty).
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// imageTag is the tag of an image reference, "" when it has none (a digest counts as one).
func imageTag(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		return image[i+1:]
	}
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[i+1:]
	}
	return ""
}
