package check

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// tree is the rendered output of one kustomization, decoded into API types.
type tree struct {
	name         string
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	configMaps   []*corev1.ConfigMap
	secrets      []*corev1.Secret
	namespaces   []*corev1.Namespace
	ingresses    []*networkingv1.Ingress
	hpas         []*autoscalingv2.HorizontalPodAutoscaler
	pdbs         []*policyv1.PodDisruptionBudget
}

// productionSecrets stands in for overlays/production/secrets.env, which is never in git.
const productionSecrets = `CHAT_ADMIN_TOKEN=test-token-0123456789
CHAT_REDIS_URL=rediss://:pw@redis.example.internal:6380/0
GEOIP_REDIS_URL=rediss://:pw@redis.example.internal:6380/1
CHAT_DATABASE_URL=postgres://chat:pw@postgres.example.internal:5432/chat?sslmode=verify-full
`

var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1.AddToScheme, corev1.AddToScheme, networkingv1.AddToScheme,
		autoscalingv2.AddToScheme, policyv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	// Strict: an unknown or duplicated field is an error, not silently dropped.
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// render builds one kustomization of deploy/k8s (dir relative to it) from an in-memory
// copy of the tree, with extra files added (such as the production secrets).
func render(t *testing.T, dir string, extra map[string]string) *tree {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	src, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel == "check" {
				return filepath.SkipDir
			}
			return mem.MkdirAll(filepath.Join("/k8s", rel))
		}
		if filepath.Base(path) == "secrets.env" {
			return nil // a developer's real secrets never take part
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return mem.WriteFile(filepath.Join("/k8s", rel), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range extra {
		if err := mem.WriteFile(filepath.Join("/k8s", dir, name), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, filepath.Join("/k8s", dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	tr := &tree{name: dir}
	for _, r := range resMap.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := decoder.Decode(y, nil, nil)
		if err != nil {
			t.Errorf("%s: %s/%s does not decode strictly: %v", dir, r.GetKind(), r.GetName(), err)
			continue
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			tr.deployments = append(tr.deployments, o)
		case *appsv1.StatefulSet:
			tr.statefulSets = append(tr.statefulSets, o)
		case *corev1.Service:
			tr.services = append(tr.services, o)
		case *corev1.ConfigMap:
			tr.configMaps = append(tr.configMaps, o)
		case *corev1.Secret:
			tr.secrets = append(tr.secrets, o)
		case *corev1.Namespace:
			tr.namespaces = append(tr.namespaces, o)
		case *networkingv1.Ingress:
			tr.ingresses = append(tr.ingresses, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			tr.hpas = append(tr.hpas, o)
		case *policyv1.PodDisruptionBudget:
			tr.pdbs = append(tr.pdbs, o)
		default:
			t.Errorf("%s: %s/%s: a kind this test does not check yet; add it", dir, r.GetKind(), r.GetName())
		}
	}
	return tr
}

func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	bad := []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  selectr: {}\n")
	if _, _, err := decoder.Decode(bad, nil, nil); err == nil {
		t.Fatal("a misspelled field decoded without error; the checks below would miss typos")
	}
}

func TestBase(t *testing.T) {
	tr := render(t, "base", nil)
	checkCommon(t, tr)
	checkEnvironment(t, tr, "development")
	var sets []string
	for _, ss := range tr.statefulSets {
		sets = append(sets, ss.Name)
	}
	if strings.Join(sets, ",") != "redis,postgres" && strings.Join(sets, ",") != "postgres,redis" {
		t.Errorf("base: want the development Redis and PostgreSQL StatefulSets, have %v", sets)
	}
	for _, name := range []string{"redis", "postgres"} {
		if findService(tr, name) == nil {
			t.Errorf("base: no %s Service for the development %s", name, name)
		}
	}
	s := secret(t, tr)
	if len(secretValue(s, "CHAT_ADMIN_TOKEN")) < 16 {
		t.Error("base: CHAT_ADMIN_TOKEN is shorter than the 16 characters chat requires")
	}
	for _, key := range []string{"CHAT_REDIS_URL", "GEOIP_REDIS_URL"} {
		if v := secretValue(s, key); !strings.HasPrefix(v, "redis://redis:6379/") {
			t.Errorf("base: %s = %q, want the in-cluster redis", key, v)
		}
	}
	checkArchive(t, tr)
	// The in-cluster PostgreSQL's password is the one in chat's URL.
	pw := secretValue(s, "POSTGRES_PASSWORD")
	if pw == "" || !strings.HasPrefix(secretValue(s, "CHAT_DATABASE_URL"), "postgres://chat:"+pw+"@postgres:5432/chat") {
		t.Errorf("base: CHAT_DATABASE_URL = %q, want the in-cluster postgres with POSTGRES_PASSWORD", secretValue(s, "CHAT_DATABASE_URL"))
	}
	for _, ss := range tr.statefulSets {
		if ss.Name != "postgres" {
			continue
		}
		c := ss.Spec.Template.Spec.Containers[0]
		var fromSecret bool
		for _, e := range c.Env {
			if e.Name == "POSTGRES_PASSWORD" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
				e.ValueFrom.SecretKeyRef.Name == s.Name && e.ValueFrom.SecretKeyRef.Key == "POSTGRES_PASSWORD" {
				fromSecret = true
			}
		}
		if !fromSecret {
			t.Error("base: postgres does not take POSTGRES_PASSWORD from the Secret")
		}
		if ps := ss.Spec.Template.Spec.SecurityContext; ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
			t.Error("base: postgres does not require runAsNonRoot")
		}
		if len(ss.Spec.VolumeClaimTemplates) == 0 {
			t.Error("base: postgres keeps its data on no volume")
		}
	}
}

// checkArchive: chat reads CHAT_DATABASE_URL from the Secret, which has it.
func checkArchive(t *testing.T, tr *tree) {
	t.Helper()
	s := secret(t, tr)
	if secretValue(s, "CHAT_DATABASE_URL") == "" {
		t.Errorf("%s: the Secret has no CHAT_DATABASE_URL", tr.name)
	}
	for _, d := range tr.deployments {
		if d.Name != "chat" {
			continue
		}
		var ok bool
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "CHAT_DATABASE_URL" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
				e.ValueFrom.SecretKeyRef.Name == s.Name && e.ValueFrom.SecretKeyRef.Key == "CHAT_DATABASE_URL" {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: chat does not take CHAT_DATABASE_URL from the Secret %s", tr.name, s.Name)
		}
	}
}

func TestProduction(t *testing.T) {
	tr := render(t, "overlays/production", map[string]string{"secrets.env": productionSecrets})
	checkCommon(t, tr)
	checkEnvironment(t, tr, "production")
	if len(tr.statefulSets) != 0 {
		t.Errorf("production: %d StatefulSets; Redis and PostgreSQL are external", len(tr.statefulSets))
	}
	for _, name := range []string{"redis", "postgres"} {
		if findService(tr, name) != nil {
			t.Errorf("production: an in-cluster %s Service is left", name)
		}
	}
	checkArchive(t, tr)
	s := secret(t, tr)
	if secretValue(s, "POSTGRES_PASSWORD") != "" {
		t.Error("production: the development POSTGRES_PASSWORD is left in the Secret")
	}
	for _, key := range []string{"CHAT_REDIS_URL", "GEOIP_REDIS_URL", "CHAT_ADMIN_TOKEN", "CHAT_DATABASE_URL"} {
		v := secretValue(s, key)
		if v == "" || strings.Contains(v, "redis://redis:") || strings.Contains(v, "@postgres:5432") || v == "dev-admin-token-change-me" {
			t.Errorf("production: %s = %q, want the value from secrets.env", key, v)
		}
	}
	for _, d := range tr.deployments {
		if d.Namespace != "apistack" {
			t.Errorf("production: Deployment %s in namespace %q", d.Name, d.Namespace)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("production: Deployment %s has fewer than 2 replicas", d.Name)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if tag := imageTag(c.Image); tag == "" || tag == "latest" || tag == "dev" {
				t.Errorf("production: %s/%s image %q: want a released tag", d.Name, c.Name, c.Image)
			}
		}
	}
	for _, h := range tr.hpas {
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
			t.Errorf("production: HPA %s allows fewer than 2 replicas", h.Name)
		}
	}
	for _, ing := range tr.ingresses {
		if len(ing.Spec.TLS) == 0 || ing.Spec.Rules[0].Host == "" {
			t.Errorf("production: Ingress %s has no host or TLS", ing.Name)
		}
	}
}

// checkCommon holds what every rendering must satisfy.
func checkCommon(t *testing.T, tr *tree) {
	t.Helper()
	if len(tr.deployments) != 2 {
		t.Errorf("%s: %d Deployments, want geoip and chat", tr.name, len(tr.deployments))
	}
	for _, d := range tr.deployments {
		checkDeployment(t, tr, d)
	}
	for _, ing := range tr.ingresses {
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				svc := findService(tr, p.Backend.Service.Name)
				if svc == nil {
					t.Errorf("%s: Ingress %s routes to missing Service %s", tr.name, ing.Name, p.Backend.Service.Name)
					continue
				}
				if !serviceHasPort(svc, p.Backend.Service.Port) {
					t.Errorf("%s: Ingress %s: Service %s has no port %v", tr.name, ing.Name, svc.Name, p.Backend.Service.Port)
				}
			}
		}
		prefix := ing.Annotations["nginx.ingress.kubernetes.io/x-forwarded-prefix"]
		if prefix != "/"+ing.Name {
			t.Errorf("%s: Ingress %s: x-forwarded-prefix %q, want /%s", tr.name, ing.Name, prefix, ing.Name)
		}
	}
	checkTrustedProxies(t, tr)
	checkIngressRoutes(t, tr)
	chat := findIngress(tr, "chat")
	if chat == nil {
		t.Errorf("%s: no chat Ingress", tr.name)
	} else {
		for _, a := range []string{"proxy-read-timeout", "proxy-send-timeout"} {
			if chat.Annotations["nginx.ingress.kubernetes.io/"+a] == "" {
				t.Errorf("%s: chat Ingress lacks %s: idle WebSockets would be cut after 60s", tr.name, a)
			}
		}
	}
}

func checkDeployment(t *testing.T, tr *tree, d *appsv1.Deployment) {
	t.Helper()
	where := fmt.Sprintf("%s: Deployment %s", tr.name, d.Name)
	pod := d.Spec.Template
	for k, v := range d.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("%s: selector %s=%s does not match the pod labels", where, k, v)
		}
	}
	ps := pod.Spec.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
		t.Errorf("%s: pod does not require runAsNonRoot", where)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("%s: mounts a service account token it does not use", where)
	}
	for _, c := range pod.Spec.Containers {
		cw := where + "/" + c.Name
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("%s: readiness probe must GET /readyz", cw)
		} else if !containerHasPort(c, c.ReadinessProbe.HTTPGet.Port.String()) {
			t.Errorf("%s: readiness probe port %s is not a container port", cw, c.ReadinessProbe.HTTPGet.Port.String())
		}
		if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
			t.Errorf("%s: liveness probe must GET /healthz", cw)
		} else if !containerHasPort(c, c.LivenessProbe.HTTPGet.Port.String()) {
			t.Errorf("%s: liveness probe port %s is not a container port", cw, c.LivenessProbe.HTTPGet.Port.String())
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: needs cpu and memory requests and a memory limit (the HPA scales on cpu requests)", cw)
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s: needs a read-only root, no privilege escalation and all capabilities dropped", cw)
		}
		if imageTag(c.Image) == "" || imageTag(c.Image) == "latest" {
			t.Errorf("%s: image %q has no tag or latest", cw, c.Image)
		}
		if port := envValue(c, "PORT"); port != "" && !containerHasPort(c, port) {
			t.Errorf("%s: PORT=%s is not a container port", cw, port)
		}
		if envValue(c, "HOST") != "0.0.0.0" {
			t.Errorf("%s: HOST must be 0.0.0.0 in a pod", cw)
		}
		checkEnvRefs(t, tr, cw, c)
	}

	svc := findService(tr, d.Name)
	if svc == nil {
		t.Errorf("%s: no Service", where)
	} else {
		if !selects(svc.Spec.Selector, pod.Labels) {
			t.Errorf("%s: Service selector %v does not select the pods", where, svc.Spec.Selector)
		}
		for _, p := range svc.Spec.Ports {
			if !containerHasPort(pod.Spec.Containers[0], p.TargetPort.String()) {
				t.Errorf("%s: Service port %s targets %s, not a container port", where, p.Name, p.TargetPort.String())
			}
		}
	}

	var hpa *autoscalingv2.HorizontalPodAutoscaler
	for _, h := range tr.hpas {
		if h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == d.Name {
			hpa = h
		}
	}
	if hpa == nil {
		t.Errorf("%s: no HorizontalPodAutoscaler", where)
	} else if hpa.Spec.MinReplicas != nil && hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
		t.Errorf("%s: HPA max %d < min %d", where, hpa.Spec.MaxReplicas, *hpa.Spec.MinReplicas)
	}

	var pdb *policyv1.PodDisruptionBudget
	for _, p := range tr.pdbs {
		if p.Spec.Selector != nil && selects(p.Spec.Selector.MatchLabels, pod.Labels) {
			pdb = p
		}
	}
	if pdb == nil {
		t.Errorf("%s: no PodDisruptionBudget selects its pods", where)
	} else if pdb.Spec.MinAvailable != nil && d.Spec.Replicas != nil && pdb.Spec.MinAvailable.IntValue() >= int(*d.Spec.Replicas) {
		t.Errorf("%s: PDB minAvailable %s blocks every voluntary eviction", where, pdb.Spec.MinAvailable.String())
	}
}

// checkEnvRefs: every ConfigMap, Secret and key a container reads exists.
func checkEnvRefs(t *testing.T, tr *tree, where string, c corev1.Container) {
	t.Helper()
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil && findConfigMap(tr, from.ConfigMapRef.Name) == nil {
			t.Errorf("%s: envFrom ConfigMap %s does not exist", where, from.ConfigMapRef.Name)
		}
		if from.SecretRef != nil && findSecret(tr, from.SecretRef.Name) == nil {
			t.Errorf("%s: envFrom Secret %s does not exist", where, from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if ref := e.ValueFrom.SecretKeyRef; ref != nil {
			s := findSecret(tr, ref.Name)
			if s == nil {
				t.Errorf("%s: env %s: Secret %s does not exist", where, e.Name, ref.Name)
			} else if secretValue(s, ref.Key) == "" {
				t.Errorf("%s: env %s: Secret %s has no key %s", where, e.Name, ref.Name, ref.Key)
			}
		}
		if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
			cm := findConfigMap(tr, ref.Name)
			if cm == nil || cm.Data[ref.Key] == "" {
				t.Errorf("%s: env %s: ConfigMap %s key %s does not exist", where, e.Name, ref.Name, ref.Key)
			}
		}
	}
}
