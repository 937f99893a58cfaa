package kubecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// hardened checks what every pod of ours must be: an unprivileged user, a read-only root, the
// runtime's seccomp filter, and no service account token (the command never calls the API).
func hardened(t *testing.T, what string, pod *corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("%s: the pod does not run as a non-root user", what)
	}
	if sc := pod.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: the pod's seccompProfile is not RuntimeDefault", what)
	}
	if a := pod.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("%s: automountServiceAccountToken is not false: the pod would hold a token it never uses", what)
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

// workersFollowLimit checks that the container has a CPU limit and that GOMAXPROCS, which
// -workers defaults to, is that limit: either from the limit through the downward API, or set by
// the Go runtime itself (Go 1.25 and later, for a module that says go 1.25 or later), which
// takes the limit rounded up and at least 2, so only a whole limit of 2 or more is met exactly.
func workersFollowLimit(t *testing.T, what string, c *corev1.Container) {
	t.Helper()
	limit, ok := c.Resources.Limits[corev1.ResourceCPU]
	if !ok || limit.Sign() <= 0 {
		t.Errorf("%s: no CPU limit: the pod may use, and run workers for, every CPU of the node", what)
		return
	}
	for _, e := range c.Env {
		if e.Name != "GOMAXPROCS" {
			continue
		}
		r := (*corev1.ResourceFieldSelector)(nil)
		if e.ValueFrom != nil {
			r = e.ValueFrom.ResourceFieldRef
		}
		one := resource.MustParse("1")
		if r == nil || r.Resource != "limits.cpu" || r.ContainerName != "" && r.ContainerName != c.Name || !r.Divisor.IsZero() && r.Divisor.Cmp(one) != 0 {
			t.Errorf("%s: $GOMAXPROCS does not come from the container's limits.cpu with divisor 1", what)
		}
		return
	}
	if limit.MilliValue()%1000 != 0 || limit.Value() < 2 {
		t.Errorf("%s: CPU limit %s: Go's own GOMAXPROCS would be %d; give a whole limit of 2 or more, or GOMAXPROCS from the limit",
			what, limit.String(), max(2, (limit.MilliValue()+999)/1000))
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go 1\.(\d+)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("go.mod has no go line")
	}
	if minor, _ := strconv.Atoi(string(m[1])); minor < 25 {
		t.Errorf("%s: go.mod says a Go before 1.25, whose runtime does not read the CPU limit: set GOMAXPROCS from it", what)
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
	if s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds <= 0 {
		t.Errorf("no activeDeadlineSeconds: a pod stalled on its volume would hold the Job for ever")
	}
	if ttl := s.TTLSecondsAfterFinished; ttl == nil || *ttl < 3600 {
		t.Errorf("ttlSecondsAfterFinished %v: want one, of an hour or more, so that the failed indexes can be read before the Job goes", ttl)
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
	workersFollowLimit(t, "job", c)
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
	var claims []string
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
		}
	}
	var pvc corev1.PersistentVolumeClaim
	decode(t, "pvc.yaml", &pvc)
	if pvc.Kind != "PersistentVolumeClaim" || pvc.APIVersion != "v1" {
		t.Errorf("pvc.yaml: kind %s %s", pvc.APIVersion, pvc.Kind)
	}
	if !slices.Contains(claims, pvc.Name) {
		t.Errorf("the Job mounts the claims %q; pvc.yaml describes %q", claims, pvc.Name)
	}
	// Pods side by side on any node all write the outputs.
	if *s.Parallelism > 1 && !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("pvc.yaml: access modes %v: pods of parallelism %d on several nodes need ReadWriteMany", pvc.Spec.AccessModes, *s.Parallelism)
	}
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; !ok || q.Sign() <= 0 {
		t.Errorf("pvc.yaml: no storage request")
	}
	if m := pvc.Spec.VolumeMode; m != nil && *m != corev1.PersistentVolumeFilesystem {
		t.Errorf("pvc.yaml: volumeMode %s: the jobs read and write files", *m)
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
	workersFollowLimit(t, "deployment", c)

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
	// On the host's network a wildcard address is every interface of the node, public ones too:
	// the host is the pod's IP, from the downward API.
	host := strings.Trim(strings.TrimSuffix(addr, ":"+m[1]), "[]")
	if v, ok := strings.CutPrefix(host, "$("); !ok || !strings.HasSuffix(v, ")") {
		t.Errorf("-metrics %q: on the host's network, want $(VAR):PORT with VAR the pod's IP", addr)
	} else {
		v = strings.TrimSuffix(v, ")")
		var podIP bool
		for _, e := range c.Env {
			if e.Name == v {
				podIP = e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP"
			}
		}
		if !podIP {
			t.Errorf("-metrics %q: $%s does not come from the downward API's status.podIP", addr, v)
		}
	}
	port, _ := strconv.Atoi(m[1])
	ann := d.Spec.Template.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != m[1] || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("scrape annotations %v: want scrape true, port %s, path /metrics", ann, m[1])
	}
	// Readiness is descrambling now; liveness is the process working, so that a feed or a key
	// server away makes the pod unready and never restarts it.
	for what, want := range map[string]struct {
		p    *corev1.Probe
		path string
	}{"readiness": {c.ReadinessProbe, "/readyz"}, "liveness": {c.LivenessProbe, "/livez"}} {
		if p := want.p; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want.path || p.HTTPGet.Port.IntValue() != port {
			t.Errorf("%s probe: want GET %s on port %d", what, want.path, port)
		}
	}
}
