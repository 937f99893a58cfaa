package kubecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The exit statuses of tsdescramble (cmd/tsdescramble/app.go) that a scheduler acts on.
const (
	exitFail  = 1 // I/O: may be retried
	exitUsage = 2 // never retried: the whole Job is wrong
	exitNoFit = 3 // never retried: that recording's keys do not fit
	exitJob   = 4 // never retried: that job's line names a file that is not there, or a bad key
)

// decode reads a manifest of deploy/kubernetes strictly: an unknown or misspelt field, or a
// field given twice, is an error.
func decode(t *testing.T, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "kubernetes", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// hardened checks what every pod of ours must be: an unprivileged user and a read-only root.
func hardened(t *testing.T, what string, pod *corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("%s: the pod does not run as a non-root user", what)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: the root file system is not read-only", what)
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: privilege escalation is not turned off", what)
	}
	if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: capabilities are not dropped", what)
	}
}

// container returns the pod's container named tsdescramble.
func container(t *testing.T, pod *corev1.PodSpec) *corev1.Container {
	t.Helper()
	for i := range pod.Containers {
		if pod.Containers[i].Name == "tsdescramble" {
			return &pod.Containers[i]
		}
	}
	t.Fatalf("no container named tsdescramble")
	return nil
}

func TestIndexedJob(t *testing.T) {
	var job batchv1.Job
	decode(t, "job.yaml", &job)
	if job.Kind != "Job" || job.APIVersion != "batch/v1" {
		t.Fatalf("kind %s %s", job.APIVersion, job.Kind)
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("not an Indexed Job: pods get no JOB_COMPLETION_INDEX")
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Parallelism < 1 || *s.Parallelism > *s.Completions {
		t.Errorf("completions and parallelism must be set, parallelism at most completions")
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex < 1 {
		t.Errorf("backoffLimitPerIndex must let an index that failed on I/O (exit 1) be retried")
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q: a podFailurePolicy needs Never", s.Template.Spec.RestartPolicy)
	}

	// The failure policy: 2 fails the Job, 3 and 4 fail their index, 1 is left to the retries.
	if s.PodFailurePolicy == nil {
		t.Fatal("no podFailurePolicy")
	}
	action := map[int32]batchv1.PodFailurePolicyAction{}
	for _, r := range s.PodFailurePolicy.Rules {
		if r.OnExitCodes == nil {
			continue
		}
		if r.OnExitCodes.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn {
			t.Errorf("rule %s: operator %s; name the exit statuses with In", r.Action, r.OnExitCodes.Operator)
		}
		if r.OnExitCodes.ContainerName == nil || *r.OnExitCodes.ContainerName != "tsdescramble" {
			t.Errorf("rule %s: not bound to the tsdescramble container", r.Action)
		}
		for _, v := range r.OnExitCodes.Values {
			action[v] = r.Action
		}
	}
	for code, want := range map[int32]batchv1.PodFailurePolicyAction{
		exitUsage: batchv1.PodFailurePolicyActionFailJob,
		exitNoFit: batchv1.PodFailurePolicyActionFailIndex,
		exitJob:   batchv1.PodFailurePolicyActionFailIndex,
	} {
		if action[code] != want {
			t.Errorf("exit %d: action %q, want %q", code, action[code], want)
		}
	}
	if a, ok := action[exitFail]; ok {
		t.Errorf("exit 1 (I/O) has the action %q: it must be left to backoffLimitPerIndex", a)
	}

	pod := &s.Template.Spec
	c := container(t, pod)
	hardened(t, "job", pod, c)
	if len(c.Args) < 3 || c.Args[0] != "batch" || !slices.Contains(c.Args, "-manifest") || !slices.Contains(c.Args, "-stats-dir") {
		t.Errorf("args %q: want batch -manifest FILE -stats-dir DIR (the index comes from JOB_COMPLETION_INDEX)", c.Args)
	}
	if slices.Contains(c.Args, "-index") {
		t.Errorf("args %q: -index would give every pod the same job", c.Args)
	}
	mounted := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounted[m.Name] = m.MountPath
	}
	for _, v := range pod.Volumes {
		delete(mounted, v.Name)
	}
	if len(c.VolumeMounts) == 0 || len(mounted) > 0 {
		t.Errorf("volume mounts %v: want the data volume, declared in the pod", c.VolumeMounts)
	}
	for i, a := range c.Args {
		if (a == "-manifest" || a == "-stats-dir") && i+1 < len(c.Args) && !underMount(c.Args[i+1], c.VolumeMounts) {
			t.Errorf("%s %s is not on a mounted volume: the root file system is read-only", a, c.Args[i+1])
		}
	}
}

// underMount reports whether path is on one of the mounts.
func underMount(path string, mounts []corev1.VolumeMount) bool {
	for _, m := range mounts {
		if rel, err := filepath.Rel(m.MountPath, path); err == nil && filepath.IsLocal(rel) {
			return true
		}
	}
	return false
}

func TestLiveDeployment(t *testing.T) {
	var d appsv1.Deployment
	decode(t, "deployment.yaml", &d)
	if d.Kind != "Deployment" || d.APIVersion != "apps/v1" {
		t.Fatalf("kind %s %s", d.APIVersion, d.Kind)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("one replica, recreated: two pods would both send the service")
	}
	pod := &d.Spec.Template.Spec
	if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("multicast needs hostNetwork (with dnsPolicy ClusterFirstWithHostNet)")
	}
	c := container(t, pod)
	hardened(t, "deployment", pod, c)

	// The key: -cw-env names a variable filled from a Secret; no control word in the args.
	arg := func(flag string) string {
		if i := slices.Index(c.Args, flag); i >= 0 && i+1 < len(c.Args) {
			return c.Args[i+1]
		}
		return ""
	}
	name := arg("-cw-env")
	if name == "" {
		t.Fatalf("args %q: no -cw-env", c.Args)
	}
	var fromSecret bool
	for _, e := range c.Env {
		if e.Name == name {
			fromSecret = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != ""
		}
	}
	if !fromSecret {
		t.Errorf("$%s does not come from a Secret", name)
	}
	hex := regexp.MustCompile(`^(0x)?[0-9a-fA-F:\- ]{12,}$`)
	for _, a := range c.Args {
		if hex.MatchString(a) {
			t.Errorf("an argument looks like a control word: keys go in the Secret")
		}
	}
	for _, f := range []string{"-cw", "-cw-even", "-cw-odd", "-biss"} {
		if slices.Contains(c.Args, f) {
			t.Errorf("args give %s: keys go in the Secret, through -cw-env", f)
		}
	}
	if f := arg("-log-format"); f != "json" {
		t.Errorf("-log-format %q, want json", f)
	}

	// Metrics and probes on the -metrics port.
	addr := arg("-metrics")
	m := regexp.MustCompile(`:(\d+)$`).FindStringSubmatch(addr)
	if m == nil {
		t.Fatalf("-metrics %q: want [HOST]:PORT", addr)
	}
	port, _ := strconv.Atoi(m[1])
	ann := d.Spec.Template.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != m[1] || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("scrape annotations %v: want scrape true, port %s, path /metrics", ann, m[1])
	}
	for what, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.IntValue() != port {
			t.Errorf("%s probe: want GET /healthz on port %d", what, port)
		}
	}
}
